#!/usr/bin/env bash
# Installs the Debian packages the tests and the UI need (chromium for browser tests, fonts-noto-cjk for
# Chinese text in images and pages) when they are missing and apt is usable. Safe to run repeatedly.
set -eu
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || need+=(fonts-noto-cjk)
[ ${#need[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing ${need[*]} and no apt-get: install them by hand" >&2; exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else echo "missing ${need[*]}: run as root or install them" >&2; exit 1; fi
fi
echo "installing ${need[*]} with apt-get ..."
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
