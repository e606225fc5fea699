# shellcheck shell=bash
# The arguments of the scripts that build something once per machine (scripts/kube/build.sh,
# scripts/upstream-occm.sh; never run): `--force` sets force=1, `--help` prints the script's
# header comment. Needs die (scripts/lib/services.sh).

# shellcheck disable=SC2034 # force is the sourcing script's
build_args() {
  force=""
  case ${1:-} in
  --force) force=1 ;;
  "") ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
}
