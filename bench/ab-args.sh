# Sourced by the A/B scripts of bench/ (gro-ab.sh, gso-ab.sh, ops-ab.sh): their one option, --out DIR, and --help,
# which prints the script's header comment. Sets OUT (the script's default, bench/results/NAME-<UTC time>, if not
# given) and REPO.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/ab-args.sh" NAME "$@"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ab_name=$1
shift
OUT=
while (($#)); do
    case $1 in
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/$ab_name.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
OUT=${OUT:-$REPO/bench/results/$ab_name-$(date -u +%Y%m%dT%H%M%SZ)}
