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

/* The clocks and the random source the engine reads, passed in the way
 * Lua's lua_newstate takes an allocator and SQLite's VFS supplies time and
 * randomness: a test gives fake ones and runs the engine in microseconds of
 * fake time. Every NULL member means the real one above; a NULL polite_env
 * pointer means all real ones (polite_env_real). The engine reads each
 * clock once per loop turn and passes the value down. */
typedef struct {
  int64_t (*mono_us)(void *ud); /* monotonic microseconds */
  int64_t (*wall_ms)(void *ud); /* Unix milliseconds */
  /* Fills buf with n random bytes; returns 0 or a negative polite_errno. */
  int (*random_bytes)(void *ud, void *buf, size_t n);
  void *ud;
} polite_env;

/* The real clocks and random source (never NULL; static storage). */
POLITE_EXTERN const polite_env *polite_env_real(void);

/* Reads env's clocks and random source, falling back to the real ones for
 * NULL members (env itself may be NULL). */
POLITE_EXTERN int64_t polite_env_mono_us(const polite_env *env);
POLITE_EXTERN int64_t polite_env_wall_ms(const polite_env *env);
POLITE_EXTERN int polite_env_random_bytes(const polite_env *env, void *buf,
                                          size_t n);

/* Size of an idempotency key string with its NUL. */
#define POLITE_IDEMPOTENCY_KEY_SIZE 37

/* The one maker of idempotency keys: 128 random bits from env's random
 * source (NULL: the real one) as a version-4 UUID, 36 lowercase characters
 * and a NUL. Returns 0, or POLITE_EIO when the source failed (out is then
 * "", never a guessable key). */
POLITE_EXTERN int polite_idempotency_key(const polite_env *env,
                                         char out[POLITE_IDEMPOTENCY_KEY_SIZE]);

#ifdef __cplusplus
}
#endif

#endif
