/* polite: umbrella header for libpolite. */
#ifndef POLITE_H
#define POLITE_H

#include <polite/version.h>
#include <polite/core.h>
#include <polite/diagnose.h>

#endif
