# Sourced by the install scripts: `quiet CMD...` runs CMD with its output in
# $LOG (a temporary file, removed at exit) and, if it fails, shows that
# output and exits 1, naming the script and the command.
LOG="$(mktemp -t "$(basename "$0" .sh).XXXXXX")"
trap 'rm -f "$LOG"' EXIT
quiet() {
    if ! "$@" >"$LOG" 2>&1; then
        echo "$(basename "$0"): failed: $*" >&2
        cat "$LOG" >&2
        exit 1
    fi
}
