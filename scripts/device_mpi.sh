#!/usr/bin/env bash
# Open MPI for a machine that has none and no network (the GPU machine, Ubuntu 24.04): Debian 12's
# Open MPI 4.1, the one monotile links here (libmpi.so.40), fetched as packages on a Debian 12 machine
# and unpacked there with `dpkg -x` under any prefix, never installed (docs/gpu_check.md, "MPI").
#
# usage: scripts/device_mpi.sh fetch [DIR]               (Debian 12, network; DIR default .device-deps/mpi)
#        scripts/device_mpi.sh unpack [DIR] PREFIX        (anywhere: unpack DIR's packages into PREFIX)
#
# unpack writes PREFIX/mpi-env.sh; after `source PREFIX/mpi-env.sh`, `mpirun -np 2 COMMAND` runs the
# unpacked mpirun, its libraries, components and help files, and nothing of the machine's own MPI.
set -euo pipefail

# Open MPI's launcher and library, its runtime's libraries (PMIx, hwloc, libevent; munge for PMIx),
# and what its transport components link (UCX, libfabric, verbs and their providers, PSM, PSM2,
# libnl, libnuma): without those, components that the environment below leaves unselected could not
# be opened, and Open MPI would warn about each. Not taken: libhwloc-plugins (X11, OpenCL, libxml2:
# hwloc works without its plugins) and the base libraries every Ubuntu has (libc, libstdc++,
# zlib, libudev, libuuid, libatomic), which would shadow the machine's newer copies.
PACKAGES=(openmpi-bin openmpi-common libopenmpi3 libpmix2 libhwloc15 libevent-core-2.1-7
          libevent-pthreads-2.1-7 libmunge2 libucx0 libfabric1 libibverbs1 ibverbs-providers librdmacm1
          libnl-3-200 libnl-route-3-200 libpsm-infinipath1 libpsm2-2 libnuma1)
MULTIARCH=x86_64-linux-gnu

die() { echo "device_mpi: $*" >&2; exit 2; }
usage() { sed -n '/^# usage:/,/^#$/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

fetch() {
  local dir=${1:-.device-deps/mpi}
  # The packages must be the ones the binaries were linked against: Debian 12's.
  grep -q '^VERSION_CODENAME=bookworm$' /etc/os-release 2>/dev/null ||
    die "fetch: expected Debian 12 (bookworm), the system monotile's MPI build links, got $(
      sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"'); hint: fetch on the CI-type machine and carry DIR"
  mkdir -p "$dir"
  [ -n "$(ls /var/lib/apt/lists 2>/dev/null | grep -v lock)" ] || apt-get update -qq
  (cd "$dir" && apt-get download "${PACKAGES[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  local package
  for package in "${PACKAGES[@]}"; do
    compgen -G "$dir/${package}_*.deb" > /dev/null || die "fetch: apt-get download did not fetch $package into $dir"
  done
  echo "fetched ${#PACKAGES[@]} packages into $dir ($(du -sh "$dir" | cut -f1)); on the other machine:"
  echo "  bash scripts/device_mpi.sh unpack $dir /tmp/mpi && source /tmp/mpi/mpi-env.sh"
}

unpack() {
  [ $# -ge 1 ] || usage
  local dir=.device-deps/mpi prefix
  if [ $# -ge 2 ]; then dir=$1; prefix=$2; else prefix=$1; fi
  local package
  for package in "${PACKAGES[@]}"; do
    compgen -G "$dir/${package}_*.deb" > /dev/null ||
      die "unpack: no ${package}_*.deb in $dir; hint: scripts/device_mpi.sh fetch $dir on a Debian 12 machine, then carry it"
  done
  command -v dpkg > /dev/null || die "unpack: dpkg not found: the packages are unpacked with dpkg -x"
  mkdir -p "$prefix"
  prefix=$(cd "$prefix" && pwd)
  local deb
  for deb in "$dir"/*.deb; do dpkg -x "$deb" "$prefix"; done
  # Debian names the launcher through its alternatives system, which dpkg -x does not run.
  ln -sf orterun "$prefix/usr/bin/mpirun"
  ln -sf orterun "$prefix/usr/bin/mpiexec"

  local usr=$prefix/usr lib=$prefix/usr/lib/$MULTIARCH
  cat > "$prefix/mpi-env.sh" << EOF
# Written by scripts/device_mpi.sh unpack: Debian 12's Open MPI unpacked under $prefix.
# Open MPI and PMIx find their components, help files and settings where these variables point
# instead of the paths compiled in (/usr/lib/$MULTIARCH/openmpi, /usr/share/openmpi, /etc/openmpi).
export OPAL_PREFIX=$usr OPAL_EXEC_PREFIX=$usr OPAL_BINDIR=$usr/bin
export OPAL_LIBDIR=$lib/openmpi/lib OPAL_PKGLIBDIR=$lib/openmpi/lib/openmpi3
export OPAL_DATAROOTDIR=$usr/share OPAL_DATADIR=$usr/share OPAL_PKGDATADIR=$usr/share/openmpi
export OPAL_SYSCONFDIR=$prefix/etc/openmpi
export PMIX_PREFIX=$lib/pmix2 PMIX_EXEC_PREFIX=$lib/pmix2 PMIX_LIBDIR=$lib/pmix2/lib
export PMIX_DATAROOTDIR=$lib/pmix2/share PMIX_DATADIR=$lib/pmix2/share PMIX_SYSCONFDIR=$prefix/etc
export PATH=$usr/bin\${PATH:+:\$PATH}
# libnl-3 sits under /lib in its package; libibverbs finds its providers beside itself.
export LD_LIBRARY_PATH=$lib:$prefix/lib/$MULTIARCH\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
# One machine, no network hardware: processes as root (containers), more ranks than cores allowed,
# shared memory between the ranks (vader, without CMA's ptrace, often refused in containers), the
# ob1 messaging layer (not UCX or libfabric), and the launcher that starts processes here only.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_pml=ob1
export OMPI_MCA_osc=sm OMPI_MCA_plm=isolated
# No binding of ranks to cores: a sandbox may refuse to set affinity, and the ranks' work is the GPU's.
export OMPI_MCA_hwloc_base_binding_policy=none
EOF

  # Every library the launcher, the MPI library and the components need must resolve, from the
  # prefix or the machine.
  local missing
  missing=$(
    source "$prefix/mpi-env.sh"
    for f in "$usr/bin/orterun" "$usr/bin/orted" "$lib/libmpi.so.40" "$lib"/openmpi/lib/openmpi3/*.so \
             "$lib"/pmix2/lib/pmix/*.so; do
      ldd "$f" 2>/dev/null | sed -n "s|^[[:space:]]*\([^ ]*\) => not found|${f#$prefix/}: \1|p"
    done)
  if [ -n "$missing" ]; then
    die "unpack: libraries not found on this machine nor in the packages:
$missing
hint: add their Debian 12 packages to PACKAGES in scripts/device_mpi.sh, fetch again and carry them"
  fi
  echo "unpacked ${#PACKAGES[@]} packages from $dir into $prefix: $(
    source "$prefix/mpi-env.sh" && ompi_info --version 2>/dev/null | head -1)"
  echo "  source $prefix/mpi-env.sh   # then: mpirun -np 2 COMMAND"
}

case "${1:-}" in
  fetch) shift; fetch "$@" ;;
  unpack) shift; unpack "$@" ;;
  *) usage ;;
esac
