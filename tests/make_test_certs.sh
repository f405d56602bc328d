#!/usr/bin/env bash
# Makes the certificates of the security tests with the openssl CLI, fresh
# keys each run, into DIR:
#   ca.pem                         the test CA
#   server.pem server.key          signed by it; CN server-1, SAN 127.0.0.1, localhost
#   server2.pem server2.key        signed by it; CN server-2 (the rotated one)
#   client.pem client.key          signed by it; CN client-1 (mTLS)
#   other_ca.pem                   another CA
#   other_client.pem other_client.key  signed by the other CA
# Usage: make_test_certs.sh DIR
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
days=2
quiet() { "$@" >/dev/null 2>&1 || { echo "make_test_certs: failed: $*" >&2; "$@"; exit 1; }; }

make_ca() {  # make_ca NAME CN
  quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.pem" -days "$days" -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

make_leaf() {  # make_leaf NAME CN CA USAGE [SAN]
  local name=$1 cn=$2 ca=$3 usage=$4 san=${5:-}
  quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$name.key" -out "$name.csr" -subj "/CN=$cn"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$usage"
    [[ -n "$san" ]] && echo "subjectAltName=$san"
  } >"$name.ext"
  quiet openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" \
    -CAcreateserial -out "$name.pem" -days "$days" -extfile "$name.ext"
  rm -f "$name.csr" "$name.ext"
}

make_ca ca "diarization test CA"
make_ca other_ca "another CA"
make_leaf server server-1 ca serverAuth "IP:127.0.0.1,DNS:localhost"
make_leaf server2 server-2 ca serverAuth "IP:127.0.0.1,DNS:localhost"
make_leaf client client-1 ca clientAuth
make_leaf other_client other-client other_ca clientAuth
rm -f ./*.srl
