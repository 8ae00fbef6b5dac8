#!/usr/bin/env bash
# Follows a documentation page as a reader would, from the repository root:
# every ```sh block runs, in order, in one bash (set -euo pipefail, each
# command echoed), and a block of any language right after a line
#
#   File `PATH`:
#
# is written to PATH (its variables expanded) where it stands. Other blocks
# are text. HTML comments just before a block steer it:
#   <!-- doc-test: skip REASON -->  the block is not run (the suite has done it)
#   <!-- doc-test: always -->       the block runs at the end, also after a
#                                   failure (clean-up)
#   <!-- doc-test: excerpt of PATH -->  each line of the block is a line of
#                                   PATH (a quoted manifest, kept in step)
# The suite runs the pages whose commands it can (tests/CMakeLists.txt), so
# that a command or file in the docs that stops working fails a test.
#
#   scripts/run-doc.sh PAGE.md [--print]   (--print: show the script, run nothing)
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || { [ $# = 2 ] && [ "$2" != --print ]; }; then
  echo "usage: scripts/run-doc.sh PAGE.md [--print]" >&2
  exit 2
fi
page="$(realpath "$1")"
cd "$(dirname "$0")/.."

script="$(mktemp)"
trap 'rm -f "$script"' EXIT
awk -v page="$page" '
  function fail(msg) { printf "run-doc: %s:%d: %s\n", page, NR, msg > "/dev/stderr"; failed = 1; exit 1 }
  BEGIN { body = ""; cleanup = "" }
  /^<!-- doc-test: skip .*-->$/ { skip = 1; next }
  /^<!-- doc-test: always -->$/ { always = 1; next }
  /^<!-- doc-test: excerpt of [^ ]+ -->$/ { excerpt = $5; next }
  /^File `[^`]+`:$/ { file = $0; sub(/^File `/, "", file); sub(/`:$/, "", file); next }
  /^```/ && !inside {
    inside = 1; lang = substr($0, 4); text = ""
    if (file == "" && lang != "sh" && excerpt == "") { skip = 0; always = 0 }
    next
  }
  /^```$/ && inside {
    inside = 0
    if (skip) { skip = 0; file = ""; always = 0; excerpt = ""; next }
    if (excerpt != "") {
      n = split(text, lines, "\n")
      for (i = 1; i < n; i++) {
        if (lines[i] == "") continue
        q = lines[i]; gsub(/'"'"'/, "'"'"'\\'"'"''"'"'", q)
        body = body "grep -qxF -- '"'"'" q "'"'"' " excerpt " || { printf '"'"'%s: not in %s: %s\\n'"'"' " page " " excerpt " '"'"'" q "'"'"' >&2; exit 1; }\n"
      }
      excerpt = ""
      next
    }
    if (file != "") {
      body = body "mkdir -p \"$(dirname \"" file "\")\"\ncat > \"" file "\" <<'"'"'DRA_DOC_EOF'"'"'\n" text "DRA_DOC_EOF\n"
      file = ""
    } else if (lang == "sh") {
      if (always) cleanup = cleanup text; else body = body text
    }
    always = 0
    next
  }
  inside { text = text $0 "\n"; next }
  /^[^<\n]/ && file != "" && $0 !~ /^$/ { fail("\"File `...`:\" not followed by a code block") }
  END {
    if (failed) exit 1
    if (inside) { printf "run-doc: %s: a code block is not closed\n", page > "/dev/stderr"; exit 1 }
    print "set -euo pipefail"
    if (cleanup != "") {
      print "doc_cleanup() {\nset +e"
      printf "%s", cleanup
      print "}\ntrap doc_cleanup EXIT"
    }
    print "set -x"
    printf "%s", body
  }
' "$page" >"$script"

if [ "${2:-}" = --print ]; then
  cat "$script"
  exit 0
fi
bash "$script"
