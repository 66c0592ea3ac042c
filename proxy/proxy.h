/* polite proxy: the throttling test proxy's one front door. The command
 * (src/cmd_proxy.c, src/cmd_proxy_ca.c) includes this header and no other
 * of proxy/ or net/: the configuration (made, set option by option, finished,
 * freed), the run, and the local CA that signs intercepted hosts. */
#ifndef POLITE_PROXY_H
#define POLITE_PROXY_H

#include "cli.h"    /* common/: the option rows */
#include "net_ca.h" /* net/: the local CA (docs/proxy-https.md) */

#include <stddef.h>
#include <stdio.h>

/* The proxy's configuration, opaque here (proxy/px.h has it). */
typedef struct px_config px_config;

/* A configuration with every documented default; NULL when out of memory.
 * Free with polite__px_config_delete. */
px_config *polite__px_config_new(void);
void polite__px_config_delete(px_config *c);

/* Every `polite proxy` option, one row each (proxy/px_options.c): the
 * command line (cli_parse over these rows into a px_config), its --config
 * file, presets and the devproxyrc reader all set options through them.
 * Never cli_free them: the setters own what they store. */
extern const cli_opt polite__px_options[];

/* Sets option `name` (a row, looked up loosely: "failure-rate",
 * "failureRate", "failure_rate") from its text. Returns 0, or -1 with a
 * message naming the option and the value in err; -2 for an unknown name.
 * --config, --devproxy-config and --preset read their files here. */
int polite__px_config_set(px_config *c, const char *name, const char *value,
                          const char *base_dir, char *err, size_t errlen);
/* The files were read (--config, --devproxy-config, --preset): from now on
 * their rows do nothing, so that cli_parse can apply the other flags over
 * what the files said. */
void polite__px_config_sources_done(px_config *c);
/* Loads the files the options name, settles the mode (--mode, --upstream,
 * a devproxyrc) and checks what only the whole configuration can tell.
 * Returns 0, or -1 with a message in err. */
int polite__px_config_finish(px_config *c, char *err, size_t errlen);
/* Runs the proxy until SIGINT/SIGTERM, then writes the reports: 0; 1 with a
 * message on stderr when it cannot start. */
int polite__px_run(px_config *c);
/* --preset list: each preset, what it imitates, and its options. */
void polite__px_preset_list(FILE *f);

#endif
