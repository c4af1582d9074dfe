#!/bin/sh
# reachctl-help.sh --experimental-dump-help
#
# Prints reachctl's help as swift-argument-parser dumps it, with the entries of
# `trust check|verify|pin|diagnose` replaced by the commands themselves: they
# run in reachd-trust (`reachd-trust ctl …`), so reachctl knows only their
# names. generate-manual runs this in place of reachctl to write reachctl(1).
# The binaries: $REACHCTL and $REACHD_TRUST, else the release build's.
set -eu
build=$(dirname "$0")/../.build/release
reachctl=${REACHCTL:-$build/reachctl}
helper=${REACHD_TRUST:-$build/reachd-trust}
[ "${1-}" = "--experimental-dump-help" ] || { echo "usage: $0 --experimental-dump-help" >&2; exit 64; }
tls=$(mktemp)
trap 'rm -f "$tls"' EXIT
"$helper" ctl --experimental-dump-help > "$tls"
"$reachctl" --experimental-dump-help | jq --slurpfile tls "$tls" '
  .command.subcommands |= map(
    if .commandName == "trust" then
      .subcommands |= map(. as $entry
        | first($tls[0].command.subcommands[] | select(.commandName == $entry.commandName)
                | .superCommands = $entry.superCommands) // $entry)
    else . end)'
