/* The one timed wait on the real clock that a component deciding on its
 * env's clock needs (the queue's thread): internal, not installed. */
#ifndef POLITE_CLOCK_WAIT_H
#define POLITE_CLOCK_WAIT_H

#include <pthread.h>
#include <stdint.h>

/* Waits on cv (mu held; cv made with CLOCK_MONOTONIC) until signalled or
 * `us` microseconds of real time have passed. The caller decides on its
 * env's clock and converts only the length of a wait into the real clock's
 * deadline here, so that the real clock is read in lib/clock.c alone. */
void polite__cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t us);

#endif
