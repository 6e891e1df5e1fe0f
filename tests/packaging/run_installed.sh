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
    # A whole session without a display: QML from the binary, a reply, a screenshot, quit.
    "${clean[@]}" QT_QPA_PLATFORM=offscreen "$root/usr/bin/ember" --model "$model" \
        --send "Once upon a time" --screenshot "$s/shot.png" || err "ember exited with $?"
    [ -s "$s/shot.png" ] || err "ember saved no screenshot"
    [ -s "$s/data/ember/conversations.sqlite" ] || err "no conversations in \$XDG_DATA_HOME/ember"
    [ -d "$s/data/ember/models" ] || err "no models folder in \$XDG_DATA_HOME/ember"
    [ -s "$s/config/ember/ember.conf" ] ||
        err "no settings in \$XDG_CONFIG_HOME/ember/ember.conf: $(cd "$s" && find config)"
fi
written=$(cd "$s/home" && find . -mindepth 1)
[ -z "$written" ] || err "written into HOME outside the XDG folders: $written"
[ $fail -eq 0 ] && echo "installed binaries OK"
exit $fail
