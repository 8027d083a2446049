#!/usr/bin/env bash
# Unpacks redis-server and valkey-server from a Debian suite (trixie: Redis 8.0, Valkey 8.1;
# unstable: Redis 8.0.6, Valkey 9.1) into DIR, without installing anything on the system: a
# private apt configuration downloads the packages and the suite's runtime libraries they link,
# dpkg -x unpacks them, and DIR/bin/<server><major>-server (redis8-server, valkey9-server…) starts
# them through the suite's own dynamic loader. Idempotent; safe to run from several processes.
# Usage: fetch-debian-servers.sh SUITE DIR
set -euo pipefail
suite=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
exec 9>"$dir/.lock"
flock 9
[ -e "$dir/bin/.done" ] && exit 0

apt_dir="$dir/apt"
rm -rf "$dir/debs" "$dir/root" "$dir/bin"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$dir/debs" "$dir/root" "$dir/bin"
# the machine's own Debian mirror, as its apt sources name it (deb822 first, then one-line form)
mirror=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1 || true)
[ -n "$mirror" ] || mirror=$(sed -E -n '/security/d; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' \
  /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -n 1 || true)
[ -n "$mirror" ] || { echo "fetch-debian-servers: no Debian mirror in the apt sources" >&2; exit 1; }
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror%/} $suite main" > "$apt_dir/sources.list"
apt=(apt-get -qq -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=root)
"${apt[@]}" update
(cd "$dir/debs" && "${apt[@]}" download redis-server redis-tools valkey-server valkey-tools \
  libc6 libstdc++6 libssl3t64 liblzf1 libjemalloc2 libsystemd0 libatomic1 libgcc-s1 libcap2 \
  libzstd1 liblz4-1 liblzma5 libgcrypt20 libgpg-error0)
for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir/root"; done

lib="$dir/root/usr/lib/x86_64-linux-gnu"
for server in redis valkey; do
  # the package's upstream major version names the wrapper: valkey-server_9.1.0+dfsg-1_amd64.deb -> 9
  deb=$(ls "$dir"/debs/"$server"-server_*.deb)
  major=$(basename "$deb" | sed -E 's/^[^_]+_([0-9]+(:|%3a))?([0-9]+)\..*/\3/')
  cat > "$dir/bin/${server}${major}-server" <<SH
#!/bin/sh
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$dir/root/usr/bin/$server-server" "\$@"
SH
  chmod +x "$dir/bin/${server}${major}-server"
  "$dir/bin/${server}${major}-server" --version
done
touch "$dir/bin/.done"
