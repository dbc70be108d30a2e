#!/bin/sh
# Makes a test CA and the certificates of the secured three-node example with openssl:
#   ca.pem / ca.key            the CA (keep ca.key offline in real life)
#   server.pem / server.key    etcd and the three agents (SAN IP:127.0.0.1, DNS:localhost;
#                              serverAuth + clientAuth: members present it to each other)
#   etcd-client.pem / .key     the agents' and hactl's client certificate for etcd
#   operator.pem / .key        an operator's client certificate for hactl (ctl.certfile)
# Usage: sh make-certs.sh [DIR]   (default /var/tmp/ha-secure/tls). Valid 365 days.
set -eu
DIR=${1:-/var/tmp/ha-secure/tls}
mkdir -p "$DIR"
cd "$DIR"
umask 077

openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 365 -subj "/CN=ha example CA"

sign() { # name CN extensions
  openssl req -new -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2"
  printf '%b' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 365 -sha256 \
    -extfile "$1.ext" -out "$1.pem"
  rm -f "$1.csr" "$1.ext"
}

sign server localhost 'extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n'
sign etcd-client ha 'extendedKeyUsage=clientAuth\n'
sign operator operator 'extendedKeyUsage=clientAuth\n'
chmod 0644 ca.pem server.pem etcd-client.pem operator.pem
echo "certificates in $DIR"
