# Sourced by the scripts that take ORDO OUT_DIR first: both checked before
# anything runs, each mistake named.
check_ordo_and_out() {  # check_ordo_and_out SCRIPT ORDO OUT_DIR
  if [[ ! -x $2 || -d $2 ]]; then
    echo "$1: ORDO '$2' is no executable (build/ordo after make build)" >&2
    exit 2
  fi
  if [[ -e $3 && ! -d $3 ]]; then
    echo "$1: OUT_DIR '$3' exists and is not a folder" >&2
    exit 2
  fi
}
