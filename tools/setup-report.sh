#!/usr/bin/env bash
# What the test of `foliosim report` needs besides Rust: headless Chromium,
# which opens the generated HTML and takes a screenshot. Installs it when
# missing (Debian/Ubuntu, as root); says what to do otherwise (the test then
# skips, saying so).
set -euo pipefail
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get install -y -q --no-install-recommends chromium >/dev/null
else
    echo "setup-report: install chromium for the HTML report's rendering test" >&2
fi
