/* polite: umbrella header for libpolite. */
#ifndef POLITE_H
#define POLITE_H

#include <polite/version.h>
#include <polite/core.h>
#include <polite/diagnose.h>
#include <polite/budget.h>
#include <polite/request.h>
#include <polite/redact.h>
#include <polite/batch.h>
#include <polite/client.h>
#include <polite/journal.h>
#include <polite/queue.h>
#include <polite/results.h>

#endif
