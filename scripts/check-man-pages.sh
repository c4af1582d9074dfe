#!/bin/sh
# check-man-pages.sh DIR — lints the three manual pages in DIR (as `make manual`
# writes them) and checks that they cannot drift from the code: every option
# reachctl and reachd accept, and every key reachd.toml may hold, appears in
# its page. Uses the release binary's links in .build/release-bin.
set -eu
pages=${1:?usage: $0 DIR}
bin=$(dirname "$0")/../.build/release-bin
sources=$(dirname "$0")/../Sources
failed=0
say() { echo "check-man-pages: $*" >&2; failed=1; }

for page in "$pages/reachctl.1" "$pages/reachd.8" "$pages/reachd.toml.5"; do
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null) || say "$page: man failed"
    [ -z "$warnings" ] || say "$page: $warnings"
done

# The text of a page with groff's escaped hyphens made plain, and mdoc's `Fl x` as `-x`.
text() { sed 's/\\-/-/g; s/\\(em/ /g; s/Fl /-/g' "$1"; }
mentions() { text "$1" | grep -qE -- "(^|[^A-Za-z0-9-])$2([^A-Za-z0-9-]|\$)"; }

# reachctl: every long option of every (sub)command, as swift-argument-parser dumps them.
for option in $(REACHCTL=$bin/reachctl REACHD_TRUST=$bin/reachd-trust "$(dirname "$0")/reachctl-help.sh" --experimental-dump-help |
                jq -r '.. | objects | select(has("names")) | .names[] | select(.kind == "long") | "--" + .name' | sort -u); do
    mentions "$pages/reachctl.1" "$option" || say "reachctl.1 does not mention $option"
done

# reachd: its options as its --help lists them.
for option in $("$bin/reachd" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
    mentions "$pages/reachd.8" "$option" || say "reachd.8 does not mention $option"
done

# reachd.toml: every key and table the config readers (the files that use TOML) ask for by name.
for key in $(grep -rlE 'TOMLTableReader|TOML\.parse' "$sources" --include=*.swift | grep -v '/TOML/' |
             xargs grep -hoE '(string|bool|integer|duration|strings|table|value|globs)\("[a-z0-9-]+"|"probe-ipv[46]"' |
             grep -oE '"[a-z0-9-]+"' | tr -d '"' | sort -u); do
    mentions "$pages/reachd.toml.5" "$key" || say "reachd.toml.5 does not mention the key $key"
done
exit $failed
