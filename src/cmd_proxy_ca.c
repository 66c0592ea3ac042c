/* polite proxy ca: shows (and makes on first use, or renews) the local root
 * CA that signs certificates for intercepted HTTPS hosts, and how to trust
 * it (docs/proxy-ca.md); a subcommand of polite proxy. */
#include "cli.h"
#include "proxy.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  const char *dir, *issue, *out;
  int renew, path_only;
} ca_opts;

/* A path or a host name: an empty one is a mistake, not "the default". */
static int set_nonempty(void *opts, const cli_opt *o, const char *val,
                        char *err, size_t errlen) {
  if (val[0] == '\0') {
    snprintf(err, errlen, "the value is empty");
    return -1;
  }
  return cli_opt_store(o, opts, val, err, errlen);
}

#define C ca_opts
static const cli_opt ca_table[] = {
    {"dir", 0, CLI_STRING, "DIR", 0, 0, NULL,
     "$POLITE_CA_DIR, else $XDG_DATA_HOME/polite/ca, else "
     "~/.local/share/polite/ca",
     NULL, "the CA directory (mode 0700; made when missing)", "Options",
     CLI_AT(C, dir), set_nonempty, NULL, 0},
    {"path", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL,
     "print only the certificate's path (for scripts)", NULL,
     CLI_AT(C, path_only), NULL, NULL, 0},
    {"renew", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL,
     "replace the CA with a new key and certificate (the old one stops "
     "working)",
     NULL, CLI_AT(C, renew), NULL, NULL, 0},
    {"issue", 0, CLI_STRING, "HOST", 0, 0, NULL, NULL, NULL,
     "write a certificate for HOST (a DNS name or an IP address) signed by "
     "the CA; needs --out",
     NULL, CLI_AT(C, issue), set_nonempty, NULL, 0},
    {"out", 0, CLI_STRING, "PREFIX", 0, 0, NULL, NULL, NULL,
     "with --issue: PREFIX.pem (the leaf, then the CA) and PREFIX.key "
     "(mode 0600)",
     NULL, CLI_AT(C, out), set_nonempty, NULL, 0},
    CLI_ROW_END};
#undef C

/* Designated fields, as cmd_help.c: only what this command has. */
const cli_command cli_cmd_proxy_ca = {
    .name = "proxy ca",
    .synopsis = "[--dir DIR] [--renew] [--path] | [--dir DIR] --issue HOST "
                "--out PREFIX",
    .summary =
        "show the local CA that signs intercepted hosts, and how to trust it",
    .description =
        "Shows the local root CA that 'polite proxy --mode forward' signs\n"
        "intercepted hosts' certificates with (made on first use), and how "
        "to\n"
        "trust it; renews it; issues a certificate for a test server.\n",
    .opts = ca_table,
    .footer = "Exit status: 0, 1 when the CA cannot be made or read, 2 for a "
              "usage\nerror. See docs/proxy-ca.md.\n"};

static void show(const net_ca *ca) {
  const char *p = polite__net_ca_cert_path(ca);
  char fp[128], subj[256], until[32];
  polite__net_ca_fingerprint(ca, fp, sizeof fp);
  polite__net_ca_subject(ca, subj, sizeof subj);
  polite__net_ca_not_after(ca, until, sizeof until);
  printf("CA certificate: %s\n"
         "key:            %s/ca.key (mode 0600, never share it)\n"
         "subject:        %s\n"
         "valid until:    %s\n"
         "SHA-256:        %s\n\n"
         "Trust it in one client:\n"
         "  curl --cacert %s ...\n"
         "  export REQUESTS_CA_BUNDLE=%s   # Python requests\n"
         "  export SSL_CERT_FILE=%s        # Python ssl/urllib/httpx, "
         "OpenSSL-based tools\n"
         "  export NODE_EXTRA_CA_CERTS=%s  # Node.js\n"
         "Note: REQUESTS_CA_BUNDLE and SSL_CERT_FILE replace the system store "
         "for that client;\n"
         "NODE_EXTRA_CA_CERTS adds to it.\n\n"
         "Trust it system-wide (Debian/Ubuntu; undo by deleting the file and "
         "re-running):\n"
         "  sudo cp %s /usr/local/share/ca-certificates/polite-proxy-ca.crt\n"
         "  sudo update-ca-certificates\n\n"
         "Make a new one (the old one stops working): polite proxy ca "
         "--renew\n",
         p, polite__net_ca_dir(ca), subj, until, fp, p, p, p, p, p);
}

int cmd_proxy_ca(int argc, char **argv) {
  ca_opts o;
  memset(&o, 0, sizeof o);
  cli_args pos = {{NULL}, 0};
  int rc = cli_parse(&cli_cmd_proxy_ca, argc, argv, &o, &pos);
  if (rc >= 0)
    return rc;
  const char *dir = o.dir, *issue = o.issue, *out = o.out;
  int renew = o.renew, path_only = o.path_only;
  if ((issue == NULL) != (out == NULL))
    return cli_usage("proxy ca", "--issue HOST and --out PREFIX go together");
  char err[1024];
  if (renew && polite__net_ca_renew(dir, err, sizeof err) < 0) {
    fprintf(stderr, "polite proxy ca: %s\n", err);
    return CLI_EXIT_FAILED;
  }
  net_ca *ca = NULL;
  if (polite__net_ca_open(dir, 1, &ca, err, sizeof err) < 0) {
    fprintf(stderr, "polite proxy ca: %s\n", err);
    return CLI_EXIT_FAILED;
  }
  rc = CLI_EXIT_OK;
  if (issue) {
    char cp[1100], kp[1100];
    snprintf(cp, sizeof cp, "%s.pem", out);
    snprintf(kp, sizeof kp, "%s.key", out);
    if (polite__net_ca_issue(ca, issue, cp, kp, err, sizeof err) < 0) {
      fprintf(stderr, "polite proxy ca: %s\n", err);
      rc = CLI_EXIT_FAILED;
    } else {
      printf("%s\n%s\n", cp, kp);
    }
  } else if (path_only) {
    printf("%s\n", polite__net_ca_cert_path(ca));
  } else {
    if (renew)
      printf("Made a new CA; clients that trusted the old one must trust "
             "this one instead.\n\n");
    show(ca);
  }
  polite__net_ca_free(ca);
  return rc;
}
