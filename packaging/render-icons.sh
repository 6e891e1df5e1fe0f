#!/usr/bin/env bash
# Renders the app icon's PNG sizes from its SVG (needs rsvg-convert, Debian package librsvg2-bin).
# The PNGs are committed, so that building Ember does not need librsvg; run this after editing
# the SVG. tests/packaging checks that each PNG exists at its size.
set -euo pipefail
icons="$(cd "$(dirname "$0")/../resources/icons/hicolor" && pwd)"
svg="$icons/scalable/apps/io.github.ember.Ember.svg"
for size in 16 32 48 64 128 256; do
    mkdir -p "$icons/${size}x${size}/apps"
    rsvg-convert -w "$size" -h "$size" "$svg" -o "$icons/${size}x${size}/apps/io.github.ember.Ember.png"
done
