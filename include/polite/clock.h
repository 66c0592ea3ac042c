/* polite clock and entropy: the only place libpolite reads the clock or the
 * random source. The pure core never calls these; the engine and the
 * command read them once per step and pass the values down. */
#ifndef POLITE_CLOCK_H
#define POLITE_CLOCK_H

#include <polite/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Wall clock, Unix milliseconds (only for HTTP-dates and logs). */
POLITE_EXTERN int64_t polite_wall_ms(void);

/* Monotonic clock in microseconds (for intervals and deadlines). */
POLITE_EXTERN int64_t polite_mono_us(void);

/* A 64-bit seed from the system's random source (getrandom, falling back to
 * /dev/urandom, then to the clock and pid). */
POLITE_EXTERN uint64_t polite_random_seed(void);

/* Fills buf with n random bytes from the system's source. Returns 0 or
 * POLITE_EIO. */
POLITE_EXTERN int polite_random_bytes(void *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif
