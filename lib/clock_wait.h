/* What lib/clock.c gives the rest of libpolite beyond polite/clock.h: the
 * one timed wait on the real clock that a component deciding on its env's
 * clock needs (the queue's thread), and the one maker of participant names.
 * Internal, not installed. */
#ifndef POLITE_CLOCK_WAIT_H
#define POLITE_CLOCK_WAIT_H

#include <polite/clock.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Waits on cv (mu held; cv made with CLOCK_MONOTONIC) until signalled or
 * `us` microseconds of real time have passed. The caller decides on its
 * env's clock and converts only the length of a wait into the real clock's
 * deadline here, so that the real clock is read in lib/clock.c alone. */
void polite__cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t us);

/* HOST:PID:RANDOM into buf (len bytes): a participant's name that operators
 * can read (which host, which process) and that no other participant has:
 * hex_digits (1 to 16) hex digits of random bits from env's source (NULL:
 * the real one); when it fails, of env's clock and the PID, which still
 * tell participants apart. The Redis budget's lease ids and the queue's
 * worker names. */
void polite__participant_id(char *buf, size_t len, const polite_env *env,
                            int hex_digits);

#endif
