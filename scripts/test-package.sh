#!/usr/bin/env bash
# Checks the Debian package `make package` built, without touching the system: its control
# fields and file list; the package unpacked (dpkg -x) into a scratch root, where the
# installed `statewatch --version` runs; systemd-sysusers and systemd-tmpfiles applied to
# that root (the service user, the backup directory); the installed unit verified
# (`systemd-analyze verify --root`, which also finds the binary and the man page there) and
# rated (`systemd-analyze security --offline`: exposure at most 3.0, printed); and the
# maintainer scripts run against stand-ins for adduser, deluser, systemctl and friends that
# only record their arguments.
#
# Usage: scripts/test-package.sh PACKAGE_BUILD_DIR   (the newest statewatch_*.deb in it)
set -euo pipefail

DIR="${1:?usage: scripts/test-package.sh PACKAGE_BUILD_DIR}"
DEB="$(ls -t "$DIR"/statewatch_*.deb 2>/dev/null | head -n 1 || true)"
[ -n "$DEB" ] || { echo "test-package: no statewatch_*.deb in $DIR (make package)" >&2; exit 1; }
MAX_EXPOSURE=30  # systemd-analyze's threshold is in tenths: 3.0

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/statewatch-package.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
fail() { echo "test-package: $*" >&2; exit 1; }
R="$SCRATCH/root"
UNIT=/usr/lib/systemd/system/statewatch.service

# --- control fields and contents ----------------------------------------------------------
[ "$(dpkg-deb --field "$DEB" Package)" = statewatch ] || fail "Package is not statewatch"
depends="$(dpkg-deb --field "$DEB" Depends)"
for dep in adduser librocksdb libboost-json libssl3 libc6; do
  grep -q "$dep" <<<"$depends" || fail "Depends lacks $dep: $depends"
done
contents="$(dpkg-deb --contents "$DEB")"
for path in ./usr/bin/statewatch ./usr/share/man/man1/statewatch.1.gz .$UNIT \
            ./usr/lib/sysusers.d/statewatch.conf ./usr/lib/tmpfiles.d/statewatch.conf \
            ./usr/share/doc/statewatch/copyright; do
  grep -q " $path\$" <<<"$contents" || fail "the package lacks $path"
done

# --- unpacked into a scratch root ---------------------------------------------------------
mkdir -p "$R"
dpkg -x "$DEB" "$R"
file_out="$(od -An -c -N4 "$R/usr/bin/statewatch" | tr -d ' ')"
[ "$file_out" = '177ELF' ] || fail "usr/bin/statewatch is not an ELF file"
version="$("$R/usr/bin/statewatch" --version)" || fail "the installed statewatch --version failed"
case "$version" in statewatch*) ;; *) fail "statewatch --version printed \"$version\"" ;; esac
if readelf -S "$R/usr/bin/statewatch" | grep -q '\.debug_info'; then
  fail "usr/bin/statewatch still carries debug information"
fi
grep -qx 'ExecStart=/usr/bin/statewatch .*' "$R$UNIT" || fail "the unit's ExecStart is not /usr/bin/statewatch"

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "test-package: ok ($version; systemd-analyze missing: unit checks skipped)"
  exit 0
fi

# The service user and the backup directory, created inside the root only.
mkdir -p "$R/etc"
sysusers="$(systemd-sysusers --root="$R" 2>&1)" || fail "systemd-sysusers: $sysusers"
grep -q '^statewatch:x:[0-9]*:[0-9]*:.*:/var/lib/statewatch:' "$R/etc/passwd" \
  || fail "systemd-sysusers made no statewatch user"
systemd-tmpfiles --root="$R" --create statewatch.conf
uid="$(awk -F: '$1 == "statewatch" { print $3 }' "$R/etc/passwd")"
[ "$(stat -c '%a %u' "$R/var/backups/statewatch")" = "750 $uid" ] \
  || fail "systemd-tmpfiles made no /var/backups/statewatch owned by statewatch, mode 750"

# verify resolves the unit's dependencies (sysinit.target, …) inside the root: systemd's
# own targets are copied in. It checks that ExecStart exists in the root and, through
# MANPATH, that man:statewatch(1) is there; any output at all counts as a failure.
targets=""
for d in /usr/lib/systemd/system /lib/systemd/system; do
  [ -f "$d/sysinit.target" ] && { targets="$d"; break; }
done
[ -n "$targets" ] || fail "no systemd targets (sysinit.target) on this machine"
cp "$targets"/*.target "$R/usr/lib/systemd/system/"
man_flag=(--man=yes)
command -v man >/dev/null 2>&1 || man_flag=(--man=no)
verify="$(MANPATH="$R/usr/share/man" systemd-analyze verify "${man_flag[@]}" --root="$R" "$UNIT" 2>&1)" \
  || fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify complained: $verify"

security="$(systemd-analyze security --offline=true --root="$R" --threshold="$MAX_EXPOSURE" \
  --no-pager statewatch.service 2>&1)" \
  || { echo "$security" >&2; fail "the unit's exposure is above 3.0"; }
exposure="$(sed -n 's/.*Overall exposure level for statewatch.service: \([0-9.]*\) .*/\1/p' <<<"$security")"
[ -n "$exposure" ] || { echo "$security" >&2; fail "no exposure figure"; }

# --- maintainer scripts, against recording stand-ins ---------------------------------------
dpkg-deb --control "$DEB" "$SCRATCH/control"
STUBS="$SCRATCH/stubs"
LOG="$SCRATCH/calls.log"
mkdir -p "$STUBS"
for cmd in adduser deluser delgroup systemctl systemd-tmpfiles install rmdir; do
  printf '#!/bin/sh\necho "%s $*" >> "%s"\n' "$cmd" "$LOG" >"$STUBS/$cmd"
done
# getent answers as if the user existed when $SCRATCH/user-exists does.
printf '#!/bin/sh\n[ -e "%s/user-exists" ] && echo "statewatch:x:999:999::/var/lib/statewatch:/usr/sbin/nologin"\n' \
  "$SCRATCH" >"$STUBS/getent"
chmod +x "$STUBS"/*
run_script() {  # run_script NAME ARGS... -> the calls it made
  : >"$LOG"
  PATH="$STUBS:$PATH" sh "$SCRATCH/control/$1" "${@:2}" || fail "$1 $* failed"
  cat "$LOG"
}
calls="$(run_script postinst configure)"
grep -qx 'adduser --system --group --quiet --home /var/lib/statewatch --no-create-home --gecos statewatch daemon statewatch' \
  <<<"$calls" || fail "postinst configure did not add the system user: $calls"
grep -qx 'systemd-tmpfiles --create statewatch.conf' <<<"$calls" \
  || fail "postinst configure did not create the backup directory: $calls"
touch "$SCRATCH/user-exists"
calls="$(run_script postinst configure 0.1.0)"
! grep -q '^adduser' <<<"$calls" || fail "postinst added an existing user again: $calls"
run_script prerm remove >/dev/null
calls="$(run_script postrm remove)"
! grep -q '^deluser' <<<"$calls" || fail "postrm remove deleted the user: $calls"
calls="$(run_script postrm purge)"
grep -qx 'deluser --system --quiet statewatch' <<<"$calls" || fail "postrm purge kept the user: $calls"

echo "test-package: ok ($(basename "$DEB"): $version; unit verified; exposure $exposure)"
