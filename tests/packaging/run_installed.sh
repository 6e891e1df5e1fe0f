#!/usr/bin/env bash
# run_installed.sh ROOT SHARED_DIR VERSION APP_BUILT: runs the executables unpacked from the .deb
# into ROOT in a clean environment (no LD_LIBRARY_PATH, no build tree), and checks that the app
# keeps its files in the XDG locations.
set -euo pipefail
root="$1" shared="$2" version="$3" app="$4"
model="$shared/models/stories260K.gguf"
s=$(mktemp -d)
trap 'rm -rf "$s"' EXIT
mkdir -p "$s/home" "$s/run" "$s/cwd"
chmod 700 "$s/run"
cd "$s/cwd"
# HOME apart from the XDG folders: anything written straight into HOME bypassed XDG.
clean=(env -i PATH=/usr/bin:/bin HOME="$s/home" XDG_DATA_HOME="$s/data"
       XDG_CONFIG_HOME="$s/config" XDG_CACHE_HOME="$s/cache" XDG_RUNTIME_DIR="$s/run")
fail=0
err() { echo "FAIL: $*" >&2; fail=1; }

out=$("${clean[@]}" "$root/usr/bin/ember-cli" info -m "$model")
echo "$out"
grep -Eq '^architecture: +llama$' <<<"$out" || err "ember-cli info: no llama architecture"
grep -Eq '^supported: +yes$' <<<"$out" || err "ember-cli info: model not supported"
gen=$("${clean[@]}" "$root/usr/bin/ember-cli" generate -m "$model" -p "Once upon a time" -n 16)
echo "$gen"
[ -n "$gen" ] || err "ember-cli generate printed nothing"

if [ "$app" = 1 ]; then
    v=$("${clean[@]}" "$root/usr/bin/ember" --version)
    echo "$v"
    [[ "$v" == "ember $version "* ]] || err "ember --version: '$v', expected 'ember $version ...'"
    # A session without a display, as a user's: QML from the binary, the model loaded, a prompt
    # answered and saved, a clean quit. The installed app has no test hooks but the API server's
    # stdin control (--api-server-control: "chat TEXT", "quit"; EMBER_CHAT events on stderr).
    app_run=("${clean[@]}" QT_QPA_PLATFORM=offscreen "$root/usr/bin/ember" --model "$model")
    mkfifo "$s/in"
    settings_saved=1  # a clean quit saves the settings (the last model)
    if "${app_run[@]}" --help | grep -q -- --api-server-control; then
        "${app_run[@]}" --api-server-control <"$s/in" >"$s/app.out" 2>"$s/app.err" &
        pid=$!
        exec 3>"$s/in"
        # "chat" is refused until the model is loaded: ask again until it is sent.
        sent=0
        while kill -0 "$pid" 2>/dev/null; do
            if [ "$sent" = 0 ]; then
                grep -q '^EMBER_API_SERVER: chat sent' "$s/app.out" && sent=1 ||
                    echo "chat Once upon a time" >&3
            fi
            grep -Eq 'EMBER_CHAT: (finished|failed)' "$s/app.err" && break
            sleep 0.5
        done
        grep -q 'EMBER_CHAT: finished' "$s/app.err" || err "ember answered no prompt"
        echo quit >&3 || true
        status=0
        wait "$pid" || status=$?
        exec 3>&-
        cat "$s/app.out"
        [ "$status" -eq 0 ] || { cat "$s/app.err" >&2; err "ember exited with $status"; }
    else
        # Built without the API server: start, wait for its data, end it with SIGTERM.
        "${app_run[@]}" >"$s/app.out" 2>&1 &
        pid=$!
        while kill -0 "$pid" 2>/dev/null && ! [ -s "$s/data/ember/conversations.sqlite" ]; do
            sleep 0.5
        done
        kill -0 "$pid" 2>/dev/null || { cat "$s/app.out" >&2; err "ember exited at start"; }
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" || true
        settings_saved=0
    fi
    [ -s "$s/data/ember/conversations.sqlite" ] || err "no conversations in \$XDG_DATA_HOME/ember"
    [ -d "$s/data/ember/models" ] || err "no models folder in \$XDG_DATA_HOME/ember"
    [ -s "$s/config/ember/ember.conf" ] || [ "$settings_saved" = 0 ] ||
        err "no settings in \$XDG_CONFIG_HOME/ember/ember.conf: $(cd "$s" && find config)"
fi
written=$(cd "$s/home" && find . -mindepth 1)
[ -z "$written" ] || err "written into HOME outside the XDG folders: $written"
[ $fail -eq 0 ] && echo "installed binaries OK"
exit $fail
