#!/usr/bin/env bash
# SIGKILL of the real app while it answers and saves a conversation, again and again in one
# profile: after every kill the database passes PRAGMA integrity_check, every message of the
# completed runs is still there, a reply that was printed (printed only after its commit) was
# saved, and the next start of the app works and keeps all of it.
# Usage: kill9.sh EMBER_BINARY MODEL
set -euo pipefail
app="$1"; model="$2"
command -v sqlite3 >/dev/null || { echo "kill9: sqlite3 is not installed" >&2; exit 1; }
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
export XDG_DATA_HOME="$home/data" XDG_CONFIG_HOME="$home/config" XDG_RUNTIME_DIR="$home/run"
export QT_QPA_PLATFORM=offscreen
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
db="$XDG_DATA_HOME/ember/conversations.sqlite"

fail() { echo "kill9: $*" >&2; exit 1; }
# Queries a copy of the database as the crash left it (main file + WAL), so that the check does
# not recover or checkpoint the real files before the app's next start does.
snapshot() {
    rm -rf "$home/snap" && mkdir -p "$home/snap"
    cp "$db" "$home/snap/db"
    [ -f "$db-wal" ] && cp "$db-wal" "$home/snap/db-wal"
    return 0
}
q() { sqlite3 -batch -noheader -cmd ".timeout 5000" "$home/snap/db" "$1"; }
live() { sqlite3 -batch -noheader -cmd ".timeout 5000" "file:$db?mode=ro" "$1" 2>/dev/null || true; }
reply_of() {  # the assistant message answering the user message $1, newlines as \n
    q "SELECT replace(a.content, char(10), '\\n') FROM messages u JOIN messages a
       ON a.conversation_id = u.conversation_id AND a.role = 'assistant' AND a.id > u.id
       WHERE u.role = 'user' AND u.content = '$1' ORDER BY a.id LIMIT 1"
}

completed=()   # prompts whose reply was printed (so committed)
replies=()
kept=()        # user messages of killed runs that were seen committed
check_db() {   # $1: what just happened
    snapshot
    [ "$(q 'PRAGMA integrity_check')" = ok ] || fail "integrity_check failed after $1"
    [ -z "$(q 'PRAGMA foreign_key_check')" ] || fail "dangling messages after $1"
    [ "$(q "SELECT count(*) FROM messages WHERE role NOT IN ('user','assistant','system')
             OR content IS NULL OR created_at IS NULL")" = 0 ] || fail "malformed rows after $1"
    local i
    for i in "${!completed[@]}"; do
        [ "$(q "SELECT count(*) FROM messages WHERE role = 'user' AND content = '${completed[$i]}'")" = 1 ] ||
            fail "the message '${completed[$i]}' is missing after $1"
        [ "$(reply_of "${completed[$i]}")" = "${replies[$i]}" ] ||
            fail "the reply to '${completed[$i]}' is missing or differs after $1"
    done
    for i in "${!kept[@]}"; do
        [ "$(q "SELECT count(*) FROM messages WHERE role = 'user' AND content = '${kept[$i]}'")" = 1 ] ||
            fail "the committed message '${kept[$i]}' is missing after $1"
    done
}

# A run to the end: the reply is printed, then the app quits by itself.
complete_run() {
    local prompt="$1" log="$home/run.log" status=0
    timeout 300 "$app" --model "$model" --device cpu --send "$prompt" >"$log" 2>&1 || status=$?
    [ "$status" -eq 0 ] || { cat "$log"; fail "ember exited with $status on '$prompt'"; }
    local reply
    reply="$(sed -n 's/^EMBER_REPLY: //p' "$log")"
    [ -n "$reply" ] || { cat "$log"; fail "no reply to '$prompt'"; }
    completed+=("$prompt")
    replies+=("$reply")
    check_db "the complete run '$prompt'"
}

start=$(date +%s.%N)
complete_run "Once upon a time there was a cat"
complete_run "Once upon a time there was a dog"
# Calibrate: how long a whole run takes here.
t_run=$(echo "$(date +%s.%N) - $start" | bc -l | awk '{printf "%.2f", $1 / 2}')
echo "kill9: a complete run takes ${t_run}s"

# Kills: some at fractions of a run's time, some right after the user message was committed
# (the reply is being generated and is saved next).
under_way=0 before_send=0 after_reply=0
i=0
for mode in 0.05 0.1 0.15 0.25 0.45 0.6 0.75 0.9 1.0 poll:0 poll:0.02 poll:0.05 poll:0.1 poll:0.2 poll:0.4; do
    i=$((i + 1))
    prompt="Killed run $i"
    log="$home/kill$i.log"
    "$app" --model "$model" --device cpu --send "$prompt" >"$log" 2>&1 &
    pid=$!
    if [[ "$mode" == poll:* ]]; then
        deadline=$(( $(date +%s) + 120 ))
        while [ "$(live "SELECT count(*) FROM messages WHERE content = '$prompt'")" != 1 ]; do
            kill -0 "$pid" 2>/dev/null || break
            [ "$(date +%s)" -lt "$deadline" ] || { kill -9 "$pid"; fail "'$prompt' never saved"; }
            sleep 0.01
        done
        sleep "${mode#poll:}"
    else
        sleep "$(echo "$t_run * $mode" | bc -l)"
    fi
    if kill -9 "$pid" 2>/dev/null; then
        wait "$pid" 2>/dev/null || true
    else
        wait "$pid" 2>/dev/null || true
        echo "kill9: run $i ($mode) finished before the kill"
    fi
    check_db "SIGKILL of run $i ($mode)"
    saved_user="$(q "SELECT count(*) FROM messages WHERE role = 'user' AND content = '$prompt'")"
    reply="$(sed -n 's/^EMBER_REPLY: //p' "$log")"
    if [ -n "$reply" ]; then
        # Printed after its commit: it must be there, whole.
        [ "$(reply_of "$prompt")" = "$reply" ] || fail "the printed reply of run $i was lost"
        after_reply=$((after_reply + 1))
        completed+=("$prompt")
        replies+=("$reply")
    elif [ "$saved_user" = 1 ]; then
        under_way=$((under_way + 1))
        kept+=("$prompt")
    else
        before_send=$((before_send + 1))
    fi
    echo "kill9: run $i ($mode): user message saved=$saved_user, reply printed=$([ -n "$reply" ] && echo yes || echo no)"
done
echo "kill9: $i kills: $before_send before the message was saved, $under_way while the reply" \
     "was generated or saved, $after_reply after the reply was saved"
[ "$under_way" -gt 0 ] || fail "no kill happened while a reply was under way"

# The next start opens the crashed database, answers and keeps everything.
complete_run "Once upon a time there was a bird"
[ "$(live "SELECT count(*) FROM conversations")" -ge 3 ] || fail "conversations lost"
echo "kill9: ok: ${#completed[@]} complete conversations intact after $i kills"
