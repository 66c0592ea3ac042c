/* polite proxy ca: shows (and makes on first use, or renews) the local root
 * CA that signs certificates for intercepted HTTPS hosts, and how to trust
 * it. */
#include "cli.h"
#include "proxy.h"

#include <stdio.h>
#include <string.h>

int cmd_proxy_ca(int argc, char **argv);

static void help(FILE *f) {
  fprintf(f,
          "Usage: polite proxy ca [--dir DIR] [--renew] [--path]\n"
          "       polite proxy ca [--dir DIR] --issue HOST --out PREFIX\n\n"
          "Shows the local root CA that `polite proxy --mode forward` signs "
          "intercepted\n"
          "hosts' certificates with (made on first use), and how to trust "
          "it.\n\n"
          "  --dir DIR       the CA directory (default $POLITE_CA_DIR, else\n"
          "                  $XDG_DATA_HOME/polite/ca, else "
          "~/.local/share/polite/ca)\n"
          "  --renew         replace the CA with a new key and certificate\n"
          "  --path          print only the certificate's path\n"
          "  --issue HOST    write a certificate for HOST signed by the CA to\n"
          "  --out PREFIX    PREFIX.pem (leaf, then CA) and PREFIX.key (mode "
          "0600)\n\n"
          "See docs/proxy-https.md.\n");
}

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
  const char *dir = NULL, *issue = NULL, *out = NULL;
  int renew = 0, path_only = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **val = NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      help(stdout);
      return CLI_EXIT_OK;
    } else if (strcmp(a, "--renew") == 0) {
      renew = 1;
    } else if (strcmp(a, "--path") == 0) {
      path_only = 1;
    } else if (strcmp(a, "--dir") == 0) {
      val = &dir;
    } else if (strcmp(a, "--issue") == 0) {
      val = &issue;
    } else if (strcmp(a, "--out") == 0) {
      val = &out;
    } else {
      return cli_usage("proxy ca", "unknown option '%s'", a);
    }
    if (val) {
      if (i + 1 >= argc || argv[i + 1][0] == '\0')
        return cli_usage("proxy ca", "%s needs a value", a);
      *val = argv[++i];
    }
  }
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
  int rc = CLI_EXIT_OK;
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
