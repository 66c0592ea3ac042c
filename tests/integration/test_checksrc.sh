#!/usr/bin/env bash
# scripts/checksrc.sh: finds banned calls, ignores comments and strings,
# honours a named checksrc-allow marker, names FILE:LINE, fails on findings.
. "$(dirname "$0")/lib.sh"
SRC=$POLITE_SRC

mkdir -p "$TMP/clean" "$TMP/dirty"
cat >"$TMP/clean/a.c" <<'C'
/* sprintf(buf, "x") in a comment is fine, and so is strcpy( here */
// atoi(s) in a line comment too
static const char *s = "gets(stdin) in a string";
static char c = '(';
int my_atoi(const char *p);            /* a longer name is not atoi */
int n = x.atoi(1) + p->strtok(2);      /* members are not the libc ones */
int k = atoi(s); // checksrc-allow: atoi (test input)
C
cat >"$TMP/dirty/b.c" <<'C'
#include <stdio.h>
void f(char *d, const char *s) {
  strcpy(d, s);
  sprintf (d, "%s", s);
  int k = atoi(s); // checksrc-allow: atol (names another function)
}
C
"$SRC/scripts/checksrc.sh" "$TMP/clean" >"$TMP/out1" 2>&1
check_quiet "a clean tree passes" [ $? -eq 0 ]
"$SRC/scripts/checksrc.sh" "$TMP/dirty" >"$TMP/out2" 2>&1
check_quiet "banned calls fail the check" [ $? -eq 1 ]
check_quiet "... naming strcpy at b.c:3" grep -q "b.c:3: strcpy() is banned" "$TMP/out2"
check_quiet "... sprintf with a space before ( at b.c:4" grep -q "b.c:4: sprintf() is banned" "$TMP/out2"
check_quiet "... an allow marker for another name does not count" grep -q "b.c:5: atoi() is banned" "$TMP/out2"
check_quiet "... three in all" grep -q "checksrc: 3 banned call(s)" "$TMP/out2"
finish
