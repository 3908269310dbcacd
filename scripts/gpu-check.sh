#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# scripts/gpu-check.sh: ringway's whole GPU and NCCL validation in one call.
#
#   scripts/gpu-check.sh --prepare          (build machine) CUDA build, Release, for
#                                           sm_80/sm_90 + PTX, packed with the runtime
#                                           libraries the GPU machine lacks into
#                                           .gpu/carry/payload.tar.gz (git-ignored)
#   scripts/gpu-check.sh --out DIR          (GPU machine) every step below; a short
#                                           table last, summary.txt and logs.tar.gz in DIR
#   scripts/gpu-check.sh --no-gpu [--no-prepare] [--out DIR]
#                                           rehearsal here: every step that needs no GPU
#                                           (unpack, libraries, CMake configure with CUDA,
#                                           drivers' argument parsing and dry runs, host
#                                           runs of the same command lines, NVTX tool,
#                                           table); GPU steps are marked SKIP or DRY
#
# Options: --budget S (seconds for all steps, default 390), --payload FILE,
#          --only REGEX (run only the steps whose names match), --skip REGEX (leave
#          out the steps whose names match), --keep (keep the
#          work folder under /tmp), --build-dir DIR (--no-gpu without a payload:
#          use that build tree's binaries), --mps on|off (default on: the C API,
#          NCCL and profile steps run under an MPS daemon of the script's own, so
#          ranks sharing the GPU run side by side instead of time-sliced), --help.
#
# Steps (each under its own timeout; a failed step does not stop the next):
#   env            card, driver, CUDA, NCCL, PyTorch versions; which tools exist
#   payload        unpack, carried libraries used only where the machine lacks them,
#                  every binary loads (else a fallback build on the machine)
#   unit-*         GPU unit tests (kernels, shm CUDA IPC, ring on device buffers)
#   sanitizer-*    compute-sanitizer memcheck: kernel tests (quick list), CUDA IPC
#   kernel-bench   float32/bfloat16/float16 sum at 256 MiB vs device-to-device copy
#   capi-T-nN      C API on device buffers, N processes on the one GPU, transport T:
#                  allreduce, reduce-scatter, allgather, broadcast, checked, busbw
#   capi-ipc-256m  device allreduce through CUDA IPC, 2 processes, 256 MiB, vs the
#                  D2D copy rate (target 50%)
#   torch-backend-cuda-n2  the ringway torch.distributed backend built against the
#                  machine's torch, on CUDA tensors: every check of
#                  scripts/gpu/torch_backend_check.py, busbw at 64 MiB
#   nccl-C-nN      torch.distributed all_reduce (NCCL), N ranks each its own
#                  NCCL_HOSTID: NCCL's socket, ringway socket, ringway auto
#   collnet-*      NCCL_COLLNET_ENABLE=1 with NCCL_ALGO=CollNetChain / CollNetDirect:
#                  checked + busbw, or NCCL's reason for declining
#   profile-*      nsys if it can make a report, else ringway's NVTX ranges through
#                  tests/gpu/nvtx_log.c (NVTX_INJECTION64_PATH); ncu --nvtx
#
# Status: PASS, FAIL, TIMEOUT, MISS (ran, target missed), DECLINED (NCCL said no,
# reason shown), SKIP (not run: no GPU, no tool, no budget), DRY (rehearsed
# without a GPU).
set -u -o pipefail

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
ROOT=$(cd "$(dirname "$SELF")/.." && pwd)
GPUDIR=$ROOT/.gpu
PY=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 # no __pycache__ in the tree; logs as they come

# ---- helpers used by every step ------------------------------------------------

now() { date +%s.%N; }
log() { printf '[gpu-check %s] %s\n' "$(date +%T)" "$*"; }
# key TEXT: the key figure of the running step
key() { printf '%s' "$*" >"$WORK/key.$STEP_NAME"; }
have() { command -v "$1" >/dev/null 2>&1; }
first_of() { # first existing file of the patterns given
	local p f
	for p in "$@"; do
		for f in $p; do
			[[ -e $f ]] && { echo "$f"; return 0; }
		done
	done
	return 1
}
find_tool() { # find_tool NAME [extra globs...]
	local n=$1
	shift
	command -v "$n" 2>/dev/null || first_of "$@" || true
}

# ---- prepare (build machine) -----------------------------------------------------

# One hash of the sources a build reads, the same with or without git, so the GPU
# machine can tell whether the payload was built from the tree it was sent with.
src_hash() {
	(cd "$ROOT" && find CMakeLists.txt cmake common abi topo kernels transport coll plugin include \
		tools tests -type f ! -name '*.pyc' 2>/dev/null | LC_ALL=C sort | xargs sha256sum |
		sha256sum | cut -c1-16)
}

# Libraries the GPU machine has for sure; everything else ldd names travels.
BASE_LIBS='linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libstdc\+\+|libgcc_s|libmvec'
PAYLOAD_BINS="tools/perf/ringway-perf tools/reduce-bench/ringway-reduce-bench
tools/netperf/ringway-netperf tools/topo/ringway-topo tests/kernels/test_reduce_cuda
tests/net/test_shm_cuda tests/coll/test_coll_ring"
PAYLOAD_TARGETS="ringway-perf ringway-reduce-bench ringway-netperf ringway-topo test_reduce_cuda
test_shm_cuda test_coll_ring nccl-net-ringway ringway ringway-nvtxlog"

do_prepare() {
	local b=$GPUDIR/build st=$GPUDIR/stage/payload nvcc jobs
	nvcc=$(find_tool nvcc /usr/local/cuda/bin/nvcc)
	[[ -n $nvcc ]] || { echo "prepare: no nvcc here; cannot build the CUDA payload" >&2; return 1; }
	jobs=$(nproc)
	mkdir -p "$GPUDIR/carry"
	log "prepare: configure $b (CUDA on, Release)"
	cmake -S "$ROOT" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGWAY_WITH_CUDA=ON \
		-DRINGWAY_WERROR=OFF -DCMAKE_CUDA_COMPILER="$nvcc" >"$GPUDIR/prepare-configure.log" 2>&1 ||
		{ tail -20 "$GPUDIR/prepare-configure.log"; return 1; }
	grep -E '^-- +(hwloc|verbs|CUDA kernels|NVTX|NVML) ' "$GPUDIR/prepare-configure.log"
	log "prepare: build ($jobs jobs)"
	# shellcheck disable=SC2086
	cmake --build "$b" -j "$jobs" --target $PAYLOAD_TARGETS >"$GPUDIR/prepare-build.log" 2>&1 ||
		{ tail -20 "$GPUDIR/prepare-build.log"; return 1; }
	rm -rf "$GPUDIR/stage" && mkdir -p "$st/bin" "$st/lib" "$st/syslib"
	local f
	for f in $PAYLOAD_BINS; do cp "$b/$f" "$st/bin/"; done
	cp -L "$b/coll/libringway.so.0" "$st/lib/libringway.so.0"
	cp "$b/plugin/libnccl-net-ringway.so" "$st/lib/"
	cp "$b/tests/gpu/libringway-nvtxlog.so" "$st/lib/" || return 1
	strip --strip-unneeded "$st"/bin/* "$st"/lib/*
	# runtime libraries outside the base set (hwloc, udev, cmocka, ...)
	for f in "$st"/bin/* "$st"/lib/*; do ldd "$f"; done | awk '/=> \//{print $1, $3}' |
		grep -Ev "^($BASE_LIBS|libringway)" | sort -u | while read -r soname path; do
		cp -L "$path" "$st/syslib/$soname"
	done
	{
		echo "ringway $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown), sources $(src_hash)"
		echo "built $(date -u +%FT%TZ) on $(uname -m), $(. /etc/os-release && echo "$PRETTY_NAME")"
		"$nvcc" --version | tail -2 | head -1
		grep -E '^-- +(hwloc|verbs|CUDA kernels|NVTX|NVML) ' "$GPUDIR/prepare-configure.log"
		echo "CUDA code: $(grep -o -- '--generate-code=[^ ]*' "$b/build.ninja" | sort -u | sed 's/--generate-code=//' | tr '\n' ' ')"
		(cd "$st" && find . -type f ! -name MANIFEST | sort | xargs sha256sum)
	} >"$st/MANIFEST"
	tar -czf "$GPUDIR/carry/payload.tar.gz.tmp" -C "$GPUDIR/stage" payload &&
		mv "$GPUDIR/carry/payload.tar.gz.tmp" "$GPUDIR/carry/payload.tar.gz" || return 1
	log "prepare: $(du -h "$GPUDIR/carry/payload.tar.gz" | cut -f1) in .gpu/carry/payload.tar.gz" \
		"($(du -sh "$st" | cut -f1) unpacked); carried libraries: $(ls "$st/syslib" | tr '\n' ' ')"
}

# ---- the steps (each runs in its own process, under timeout) ---------------------

# A unit test binary: PASS when it exits 0 and skipped nothing but its no-GPU cases.
unit_test() {
	local t=$RW_TESTS/$1
	shift
	[[ -x $t ]] || { key "no binary $t"; return 77; }
	"$t" "$@"
	local rc=$? ok skipped
	ok=$(grep -c '^\[       OK \]' "$WORK/log.$STEP_NAME" || true)
	skipped=$(grep '^\[  SKIPPED \] [a-z]' "$WORK/log.$STEP_NAME" | grep -v without_gpu |
		awk '{print $NF}' | sort -u | tr '\n' ' ')
	if [[ $MODE == nogpu ]]; then
		key "$ok ok; skipped here: ${skipped:-none}"
		[[ $rc == 0 ]] && return 5
		return 1
	fi
	key "$ok ok${skipped:+; skipped on a GPU: $skipped}"
	[[ $rc == 0 && -z $skipped ]]
}

st_unit_reduce_cuda() { unit_test test_reduce_cuda; }
st_unit_shm_cuda() { unit_test test_shm_cuda; }
st_unit_coll_ring() {
	if [[ $MODE == nogpu ]]; then # its own CTest entry covers it here
		key "not rehearsed: test_coll_ring runs as its own test here"
		return 77
	fi
	unit_test test_coll_ring
}

sanitize() { # sanitize ARGS...: memcheck, key = the error summary
	[[ -n $SANITIZER ]] || { key "compute-sanitizer not found"; return 77; }
	"$SANITIZER" --tool memcheck --error-exitcode 99 --print-limit 20 "$@"
	local rc=$?
	key "$(grep -h 'ERROR SUMMARY' "$WORK/log.$STEP_NAME" | tail -1 | sed 's/=* *//') (rc $rc)"
	return $rc
}
st_sanitizer_kernels() {
	[[ -x $RW_TESTS/test_reduce_cuda ]] || { key "no test binary"; return 77; }
	sanitize "$RW_TESTS/test_reduce_cuda" quick
}
st_sanitizer_ipc() {
	sanitize --target-processes all env RINGWAY_TRANSPORT=shm RINGWAY_TIMEOUT_MS=60000 \
		"$RW_BIN/ringway-perf" --local 2 --mem device -b 1M -e 4M -f 4 -n 2 -w 1 -c 1
}

st_kernel_bench() {
	local rc
	"$RW_BIN/ringway-reduce-bench" --device-only -S 256M -d float32,bfloat16,float16 -o sum -n 10
	rc=$?
	if [[ $MODE == nogpu ]]; then
		key "no GPU here (bench exit $rc: $(grep -h '^# device' "$WORK/log.$STEP_NAME" | head -1))"
		return 77
	fi
	[[ $rc == 0 ]] || { key "exit $rc"; return 1; }
	key "$("$PY" "$ROOT/scripts/gpu/report.py" bench "$WORK/log.$STEP_NAME")"
	"$PY" "$ROOT/scripts/gpu/report.py" bench "$WORK/log.$STEP_NAME" >/dev/null || return 3
}

# capi TRANSPORT N: the four collectives through the C API on device buffers.
capi() {
	local tr=$1 n=$2 c rc=0 parts="" mem=device emax=128M
	local -A short=([allreduce]=ar [reduce_scatter]=rs [allgather]=ag [broadcast]=bc)
	[[ $MODE == nogpu ]] && { mem=host; emax=64K; }
	# each collective bounded on its own (a stall costs a quarter of the step, and
	# ringway's own stall report, RINGWAY_TIMEOUT_MS, comes first)
	local each=$((STEP_LIMIT / 4 - 2)) stall
	((each < 10)) && each=10
	stall=$(((each - 5) * 1000))
	for c in allreduce reduce_scatter allgather broadcast; do
		echo "### $c"
		RINGWAY_TRANSPORT=$tr RINGWAY_TIMEOUT_MS=$stall timeout -k 3 "$each" "$RW_BIN/ringway-perf" \
			--local "$n" --mem $mem --coll $c -b 8 -e $emax -f 16 -n 3 -w 1 -c 1 \
			>"$WORK/capi.$c.txt" 2>&1
		local r=$?
		cat "$WORK/capi.$c.txt"
		[[ $r == 0 ]] || rc=1
		parts+="${short[$c]} $("$PY" "$ROOT/scripts/gpu/report.py" perf "$WORK/capi.$c.txt" |
			sed 's/busbw //; s/ GB\/s//')$([[ $r == 124 || $r == 137 ]] && echo " (killed after ${each}s)")$([[ $r != 0 && $r != 124 && $r != 137 ]] && echo " (exit $r)"); "
		key "${parts%; } (busbw GB/s @size, #wrong)"
	done
	key "${parts%; } (busbw GB/s @size, #wrong)"
	[[ $MODE == nogpu && $rc == 0 ]] && return 5
	return $rc
}
# capi-ipc-256m: issue 15's figure: a device allreduce through CUDA IPC (shm, no
# host copy) between 2 processes on the one GPU at 256 MiB, against the
# device-to-device copy rate kernel-bench measured (its GB/s count read +
# write, so bytes copied per second are half of it).
st_capi_ipc_256m() {
	local mem=device size=256M r d2d bus
	[[ $MODE == nogpu ]] && { mem=host; size=1M; }
	RINGWAY_TRANSPORT=shm timeout -k 3 $((STEP_LIMIT - 5)) "$RW_BIN/ringway-perf" --local 2 \
		--mem $mem -b $size -e $size -n 5 -w 2 -c 1 >"$WORK/ipc.txt" 2>&1
	r=$?
	cat "$WORK/ipc.txt"
	bus=$("$PY" "$ROOT/scripts/gpu/report.py" perf "$WORK/ipc.txt")
	d2d=$(sed -n 's/^dev *bytes *copy *cuda *\([0-9.]*\) GB\/s.*/\1/p' "$WORK/log.kernel-bench" 2>/dev/null | head -1)
	if [[ -n $d2d && $bus =~ busbw\ ([0-9.]+) ]]; then
		local pct
		pct=$(awk -v b="${BASH_REMATCH[1]}" -v c="$d2d" 'BEGIN { printf "%.0f", 100 * b / (c / 2) }')
		key "allreduce $size over CUDA IPC: $bus; D2D copy $d2d GB/s (r+w): $pct% of its copy rate (target 50%)"
		((r == 0 && pct < 50)) && r=3 # ran, target missed
	else
		key "allreduce $size over CUDA IPC: $bus$([[ $r != 0 ]] && echo " (exit $r)")"
	fi
	[[ $MODE == nogpu && $r == 0 ]] && return 5
	return $r
}
# The torch.distributed backend (python/ringway_torch) on CUDA tensors: built
# here against this machine's torch and the payload's libringway, then
# scripts/gpu/torch_backend_check.py on 2 ranks sharing the GPU.
st_torch_backend_cuda_n2() {
	local site=$WORK/rwtorch tv r
	if [[ $MODE == nogpu ]]; then
		key "needs a GPU and a torch with CUDA"
		return 77
	fi
	tv=$("$PY" -c 'import torch; print(torch.__version__)' 2>&1 | tail -1)
	if ! (cd "$ROOT/python" && LIBRINGWAY_DIR=$RW_LIB "$PY" setup.py -q build \
		--build-base "$WORK/rwtorch-build" --build-lib "$site") >"$WORK/torch-build.txt" 2>&1; then
		cat "$WORK/torch-build.txt"
		key "building ringway_torch against torch $tv failed: $(grep -m1 -E 'error' "$WORK/torch-build.txt" | cut -c1-160)"
		return 1
	fi
	PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} OMP_NUM_THREADS=1 timeout -k 3 $((STEP_LIMIT - 5)) \
		"$PY" -m torch.distributed.run --standalone --nproc-per-node 2 \
		"$ROOT/scripts/gpu/torch_backend_check.py" >"$WORK/torch.txt" 2>&1
	r=$?
	cat "$WORK/torch.txt"
	key "$(grep -h '^RESULT' "$WORK/torch.txt" | tail -1 | cut -c8-)$([[ $r != 0 ]] && echo " (exit $r)")"
	return $r
}
st_capi_shm_n2() { capi shm 2; }
st_capi_shm_n4() { capi shm 4; }
st_capi_socket_n2() { capi socket 2; }
st_capi_socket_n4() { capi socket 4; }

# nccl CONFIG N [driver args...]: one torch.distributed run under NCCL.
nccl() {
	local cfg=$1 n=$2 label
	shift 2
	label=nccl-$cfg-n$n
	export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,NET}
	case $cfg in
	socket)
		export NCCL_NET=Socket NCCL_NET_PLUGIN=none ;;
	rw-socket)
		export NCCL_NET_PLUGIN=ringway NCCL_NET=ringway RINGWAY_TRANSPORT=socket ;;
	rw-auto)
		export NCCL_NET_PLUGIN=ringway NCCL_NET=ringway ;;
	collnet-chain | collnet-direct)
		export NCCL_NET_PLUGIN=ringway NCCL_NET=ringway NCCL_COLLNET_ENABLE=1
		export NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,TUNING,COLL
		if [[ $cfg == collnet-chain ]]; then export NCCL_ALGO=CollNetChain; else export NCCL_ALGO=CollNetDirect; fi ;;
	esac
	local args=(--nranks "$n" --label "$label" --log-dir "$LOGS/nccl" --json "$LOGS/nccl/$label.json"
		--timeout "$((STEP_LIMIT > 20 ? STEP_LIMIT - 10 : 10))" "$@")
	mkdir -p "$LOGS/nccl"
	if [[ $MODE == nogpu ]]; then
		# the plan with this environment, then the driver end to end on the fake torch
		# (scripts/gpu/fake_torch: gloo-like collectives through files, tiny sizes)
		"$PY" "$ROOT/scripts/gpu/torch_allreduce.py" "${args[@]}" --dry-run || return 1
		local planned
		planned=$(grep -c '^ *[0-9]' "$WORK/log.$STEP_NAME")
		if [[ $cfg != rw-socket && $cfg != collnet-chain ]] || [[ $n != 2 && $cfg == rw-socket ]]; then
			# two fake runs are enough to rehearse the driver and the parsing
			key "dry run: $planned points planned"
			return 5
		fi
		mkdir -p "$WORK/fake.$label"
		PYTHONPATH=$ROOT/scripts/gpu/fake_torch FAKE_TORCH_DIR=$WORK/fake.$label \
			"$PY" "$ROOT/scripts/gpu/torch_allreduce.py" "${args[@]}" --device cpu \
			--sizes 8,2K --dtypes float32,bfloat16,float16 || { key "fake-torch run failed"; return 1; }
		key "dry run: $planned points planned; fake torch: $("$PY" "$ROOT/scripts/gpu/report.py" nccl "$LOGS/nccl/$label.json")"
		return 5
	fi
	"$PY" "$ROOT/scripts/gpu/torch_allreduce.py" "${args[@]}"
	local rc=$? logs=("$LOGS/nccl/$label".rank*.log) load=""
	# ringway's load line, NCCL's choice of network, and how the channels go
	grep -h -m3 -E 'NET/Plugin|ringway [0-9.]+: NET/ringway|Using network|NET/Socket : Using' \
		"${logs[@]}" 2>/dev/null | sed "s/^/$label: /" | sort -u >>"$LOGS/nccl/loadlines.txt"
	load=$(grep -h -m1 -oE 'ringway [0-9.]+: NET/ringway[^,]*, transport [^,]*' "${logs[0]}" 2>/dev/null)
	local via
	via=$(grep -h -oE 'via (NET|COLLNET)/[A-Za-z]+' "${logs[@]}" 2>/dev/null | sort | uniq -c |
		awk '{printf "%s%s x%s", sep, $3, $1; sep=", "}')
	case $cfg in
	collnet-*)
		grep -h -iE 'collnet' "${logs[@]}" | grep -v 'via COLLNET' | sed 's/^[^ ]* [^ ]* //' |
			sort | uniq -c | sort -rn >"$LOGS/nccl/$label.reasons.txt"
		if [[ $rc == 0 && $via == *COLLNET* ]]; then
			key "$("$PY" "$ROOT/scripts/gpu/report.py" nccl "$LOGS/nccl/$label.json"); $via"
			return 0
		fi
		local why
		why=$(grep -h -iE 'collnet|no algorithm|invalid usage|internal error' "${logs[@]}" |
			grep -iE 'warn|not|fail|disabl|unsupport|error|no algorithm|skip' | head -1 |
			sed 's/^[^ ]* [^ ]* //' | cut -c1-150)
		[[ $rc == 0 ]] && why="ran, no COLLNET channel (${via:-no via lines}); ${why:-see reasons.txt}"
		key "declined: ${why:-no reason in the log (see $label.reasons.txt)}"
		[[ -n $why ]] && return 4
		return 1 ;;
	esac
	if [[ $rc != 0 ]]; then
		key "exit $rc: $(grep -h -m1 -E 'Error|error|WARN' "${logs[@]}" 2>/dev/null | cut -c1-140)"
		return 1
	fi
	key "$("$PY" "$ROOT/scripts/gpu/report.py" nccl "$LOGS/nccl/$label.json")${via:+; $via}${load:+; $load}"
	if [[ $cfg == rw-* && -z $load ]]; then
		key "no ringway load line in the log (NCCL_NET=ringway did not load the plugin?)"
		return 1
	fi
	[[ $cfg == rw-socket && $load != *"transport socket"* ]] && { key "not on socket: $load"; return 1; }
	return 0
}
st_nccl_socket_n2() { nccl socket 2; }
st_nccl_rw_socket_n2() { nccl rw-socket 2; }
st_nccl_rw_auto_n2() { nccl rw-auto 2; }
st_nccl_socket_n4() { nccl socket 4; }
st_nccl_rw_socket_n4() { nccl rw-socket 4; }
st_nccl_rw_auto_n4() { nccl rw-auto 4; }
st_collnet_chain_n4() { nccl collnet-chain 4 --dtypes float32 --sizes 4K,1M,64M; }
st_collnet_direct_n4() { nccl collnet-direct 4 --dtypes float32 --sizes 4K,1M,64M; }

# profile: nsys if it makes a report; ringway's NVTX ranges through our NVTX tool.
st_profile_nvtx() {
	local mem=device inj=$RW_LIB/libringway-nvtxlog.so nsys_ok=0 rc=0 parts=""
	[[ $MODE == nogpu ]] && mem=host
	mkdir -p "$LOGS/nvtx"
	if [[ ! -f $inj && $MODE == nogpu ]]; then
		key "no NVTX tool library (this build has no NVTX)"
		return 77
	fi
	if [[ -n $NSYS && $MODE == gpu ]]; then
		echo "### nsys: $NSYS"
		timeout -k 5 30 "$NSYS" profile -t nvtx,osrt,cuda -o "$WORK/prof" --force-overwrite true \
			env RINGWAY_TRANSPORT=socket "$RW_BIN/ringway-perf" --local 2 --mem device \
			-b 1M -e 16M -f 4 -n 3 -w 1 && timeout -k 5 15 "$NSYS" stats -r nvtx_sum \
			"$WORK/prof.nsys-rep" >"$LOGS/nvtx/nsys-nvtx_sum.txt" 2>&1 &&
			grep -q 'ringway allreduce' "$LOGS/nvtx/nsys-nvtx_sum.txt" && nsys_ok=1
		cat "$LOGS/nvtx/nsys-nvtx_sum.txt" 2>/dev/null
		parts="nsys: $([[ $nsys_ok == 1 ]] && echo "report with ringway ranges" || echo "no report")"
	else
		parts="nsys: not found"
	fi
	echo "### NVTX tool ($inj) on ringway-perf, socket, $mem memory"
	RWGPU_NVTX_LOG=$LOGS/nvtx/perf NVTX_INJECTION64_PATH=$inj RINGWAY_TRANSPORT=socket \
		"$RW_BIN/ringway-perf" --local 2 --mem $mem -b 1M -e 64M -f 4 -n 5 -w 1 || rc=1
	"$PY" "$ROOT/scripts/gpu/report.py" nvtx "$LOGS"/nvtx/perf.* | tee "$LOGS/nvtx/perf-summary.txt" || rc=1
	parts+="; tool: $(awk '/range/{n++} END{print n+0}' "$LOGS/nvtx/perf-summary.txt") range names"
	parts+=" ($(grep -m1 'ringway allreduce' "$LOGS/nvtx/perf-summary.txt" | awk '{print $5 " allreduces"}'))"
	if [[ $MODE == gpu ]]; then
		echo "### NVTX tool under NCCL (ringway socket, 2 ranks)"
		RWGPU_NVTX_LOG=$LOGS/nvtx/nccl NVTX_INJECTION64_PATH=$inj NCCL_NET_PLUGIN=ringway \
			NCCL_NET=ringway RINGWAY_TRANSPORT=socket "$PY" "$ROOT/scripts/gpu/torch_allreduce.py" \
			--nranks 2 --label prof-nccl --log-dir "$LOGS/nvtx" --sizes 1M,64M --dtypes float32 \
			--timeout 45 && "$PY" "$ROOT/scripts/gpu/report.py" nvtx "$LOGS"/nvtx/nccl.* |
			tee "$LOGS/nvtx/nccl-summary.txt" &&
			parts+="; under NCCL: $(awk '/range/{n++} END{print n+0}' "$LOGS/nvtx/nccl-summary.txt") range names"
	fi
	key "$parts"
	if [[ $MODE == nogpu ]]; then
		grep -q 'ringway allreduce' "$LOGS/nvtx/perf-summary.txt" && return 5
		key "no ringway ranges: this build has no NVTX (CUDA toolkit headers absent at configure)"
		return 77
	fi
	return $rc
}
st_profile_ncu() {
	[[ -n $NCU ]] || { key "ncu not found"; return 77; }
	"$NCU" --clock-control none --nvtx --target-processes all -k 'regex:fold' -c 2 \
		env RINGWAY_TRANSPORT=shm "$RW_BIN/ringway-perf" --local 2 --mem device -b 16M -e 16M \
		-n 1 -w 0
	local rc=$?
	key "rc $rc; $(grep -c 'ringway allreduce' "$WORK/log.$STEP_NAME") lines naming ringway allreduce"
	return $rc
}

# ---- MPS: ranks sharing the one GPU run side by side ------------------------------
#
# Without MPS the processes' contexts are time-sliced on the GPU: a rank's
# NCCL kernel waiting for its peer runs only in its slice, so every ring step
# costs a slice (about 4.5 ms seen on an H200) whatever the network does.
# The C API and NCCL steps run under an MPS daemon of our own (its pipe and
# logs in the work folder); the sanitizer steps run without it.

mps_start() {
	local t0 ctl
	t0=$(now)
	ctl=$(find_tool nvidia-cuda-mps-control)
	if [[ $MODE != gpu || $MPS == off || -z $ctl ]]; then
		record mps-start SKIP 0 "$([[ -z $ctl ]] && echo "no nvidia-cuda-mps-control" || echo "mode $MODE, --mps $MPS"): ranks time-share the GPU"
		return
	fi
	export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps/pipe CUDA_MPS_LOG_DIRECTORY=$WORK/mps/log
	mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
	if timeout 20 "$ctl" -d >"$LOGS/mps-start.log" 2>&1; then
		MPS_CTL=$ctl
		echo "MPS: on (our own daemon) for the C API, NCCL and profile steps" >>"$WORK/versions.txt"
		record mps-start PASS "$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')" \
			"MPS daemon started: ranks share the GPU concurrently"
	else
		unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
		echo "MPS: off (daemon did not start)" >>"$WORK/versions.txt"
		record mps-start FAIL "$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')" \
			"daemon did not start: $(tail -1 "$LOGS/mps-start.log" | cut -c1-100)"
	fi
}

mps_stop() {
	[[ -n ${MPS_CTL:-} ]] || return 0
	local servers
	servers=$(echo get_server_list | timeout 10 "$MPS_CTL" 2>/dev/null | wc -w)
	echo quit | timeout 20 "$MPS_CTL" >/dev/null 2>&1
	cp "$CUDA_MPS_LOG_DIRECTORY"/control.log "$LOGS/mps-control.log" 2>/dev/null
	record mps-stop PASS 0 "$servers MPS server(s) were running; daemon stopped"
	unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY MPS_CTL
}

# ---- the runner -------------------------------------------------------------------

record() { # record NAME STATUS SECONDS KEY
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$STEPS"
	log "$(printf '%-20s %-8s %6ss  %s' "$1" "$2" "$3" "$4")"
}

# run_step NAME LIMIT: run st_<name> in a child of this script under timeout.
run_step() {
	local name=$1 limit=$2 fn=st_${1//-/_} left t0 rc status secs k
	if [[ -n $ONLY && ! $name =~ $ONLY ]]; then return; fi
	if [[ -n $SKIP_RE && $name =~ $SKIP_RE ]]; then
		record "$name" SKIP 0 "left out by --skip '$SKIP_RE'"
		return
	fi
	left=$(awk -v b="$BUDGET" -v t0="$T0" -v t="$(now)" 'BEGIN{printf "%d", b - (t - t0)}')
	if ((left < 15)); then
		record "$name" SKIP 0 "budget of ${BUDGET}s spent"
		return
	fi
	((limit > left)) && limit=$left
	t0=$(now)
	STEP_NAME=$name STEP_LIMIT=$limit timeout -k 5 "$limit" bash "$SELF" --run-step "$fn" \
		>"$WORK/log.$name" 2>&1
	rc=$?
	secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')
	k=$(tr '\t\n' '  ' <"$WORK/key.$name" 2>/dev/null)
	if [[ -z $k && $rc != 0 ]]; then # what the step said last
		k="last: $(grep -v '^[[:space:]]*$' "$WORK/log.$name" | tail -1 | cut -c1-120)"
	fi
	case $rc in
	0) status=PASS ;;
	3) status=MISS ;;
	4) status=DECLINED ;;
	5) status=DRY ;;
	77) status=SKIP ;;
	124 | 137) status=TIMEOUT k="killed after ${limit}s; ${k}" ;;
	*) status=FAIL k="exit $rc; ${k:-see logs/$name.log}" ;;
	esac
	cp "$WORK/log.$name" "$LOGS/$name.log"
	record "$name" "$status" "$secs" "$k"
}

# The carried payload: unpack, libraries, does every binary load?
setup_payload() {
	local t0 pl=$WORK/payload used="" f bad="" secs
	t0=$(now)
	mkdir -p "$WORK/fallback-lib"
	if [[ -f $PAYLOAD ]] && timeout 60 tar -xzf "$PAYLOAD" -C "$WORK"; then
		export RW_BIN=$pl/bin RW_LIB=$pl/lib RW_TESTS=$pl/bin
		# a carried library is used only where the machine has none of that name
		for f in "$pl"/syslib/*; do
			[[ -e $f ]] || continue
			if ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$(basename "$f") "; then
				continue
			fi
			ln -sf "$f" "$WORK/fallback-lib/" && used+="$(basename "$f") "
		done
		export LD_LIBRARY_PATH=$RW_LIB:$WORK/fallback-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		for f in "$pl"/bin/* "$pl"/lib/*.so*; do
			if ldd "$f" 2>&1 | grep -q 'not found'; then
				bad+="$(basename "$f"): $(ldd "$f" | awk '/not found/{print $1}' | tr '\n' ' ')"
			fi
		done
		"$RW_BIN/ringway-perf" --help >/dev/null 2>&1 || bad+="ringway-perf does not start; "
		head -3 "$pl/MANIFEST" | sed 's/^/payload: /'
		local want
		want=$(head -1 "$pl/MANIFEST" | grep -o 'sources [0-9a-f]*' | cut -d' ' -f2)
		if [[ $want != "$(src_hash)" ]]; then
			used+="; STALE: built from other sources than these ($want; rerun --prepare)"
		fi
	else
		bad="no payload at $PAYLOAD (run scripts/gpu-check.sh --prepare, carry .gpu/carry)"
	fi
	secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')
	if [[ -z $bad ]]; then
		record payload PASS "$secs" "binaries load; carried libraries used: ${used:-none}"
		return 0
	fi
	record payload FAIL "$secs" "PREBUILT BINARIES DO NOT LOAD: $bad"
	[[ $MODE == nogpu ]] && return 1
	# fall back: build the tools and the plugin here (no tests without cmocka)
	t0=$(now)
	local fb=$WORK/fbbuild
	if timeout -k 5 200 bash -c "cmake -S '$ROOT' -B '$fb' -G Ninja -DCMAKE_BUILD_TYPE=Release \
		-DRINGWAY_WITH_CUDA=ON -DRINGWAY_WITH_HWLOC=AUTO -DRINGWAY_WITH_VERBS=AUTO \
		-DRINGWAY_BUILD_TESTS=OFF -DRINGWAY_WERROR=OFF && cmake --build '$fb' -j \$(nproc) \
		--target ringway-perf ringway-reduce-bench nccl-net-ringway ringway" \
		>"$LOGS/fallback-build.log" 2>&1; then
		mkdir -p "$WORK/fb/bin" "$WORK/fb/lib"
		cp "$fb"/tools/perf/ringway-perf "$fb"/tools/reduce-bench/ringway-reduce-bench "$WORK/fb/bin/"
		cp -L "$fb"/coll/libringway.so.0 "$fb"/plugin/libnccl-net-ringway.so "$WORK/fb/lib/"
		[[ -f ${RW_LIB:-/nonexistent}/libringway-nvtxlog.so ]] && cp "$RW_LIB/libringway-nvtxlog.so" "$WORK/fb/lib/"
		export RW_BIN=$WORK/fb/bin RW_LIB=$WORK/fb/lib RW_TESTS=$WORK/fb/none
		export LD_LIBRARY_PATH=$RW_LIB:$WORK/fallback-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		record fallback-build PASS "$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')" \
			"built on this machine; unit tests unavailable"
	else
		record fallback-build FAIL "$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')" \
			"$(tail -1 "$LOGS/fallback-build.log" | cut -c1-150)"
		export RW_BIN=$WORK/none RW_LIB=$WORK/none RW_TESTS=$WORK/none
	fi
}

# Rehearsal without a payload: the binaries of an existing build tree.
setup_builddir() {
	local b=$1 d=$WORK/bd f
	mkdir -p "$d/bin" "$d/lib"
	for f in $PAYLOAD_BINS; do [[ -x $b/$f ]] && ln -sf "$b/$f" "$d/bin/"; done
	for f in coll/libringway.so.0 plugin/libnccl-net-ringway.so; do
		[[ -e $b/$f ]] && ln -sf "$b/$f" "$d/lib/"
	done
	[[ -e $b/tests/gpu/libringway-nvtxlog.so ]] && ln -sf "$b/tests/gpu/libringway-nvtxlog.so" "$d/lib/"
	export RW_BIN=$d/bin RW_LIB=$d/lib RW_TESTS=$d/bin
	export LD_LIBRARY_PATH=$RW_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	record payload SKIP 0 "no payload: binaries of the build tree $b ($(ls "$d/bin" | wc -l) found)"
}

# Versions and tools (in this shell: later steps use what it finds).
setup_env() {
	local t0 gpu cuda tv secs
	t0=$(now)
	if ! "$PY" -c 'import torch' 2>/dev/null && [[ -x /opt/torch/.venv/bin/python3 ]]; then
		PY=/opt/torch/.venv/bin/python3
	fi
	export PY
	SANITIZER=$(find_tool compute-sanitizer '/usr/local/cuda*/bin/compute-sanitizer' \
		'/usr/local/cuda*/compute-sanitizer/compute-sanitizer')
	NCU=$(find_tool ncu '/usr/local/cuda*/bin/ncu' '/opt/nvidia/nsight-compute/*/ncu')
	NSYS=$(find_tool nsys '/usr/local/cuda*/bin/nsys' '/opt/nvidia/nsight-systems/*/bin/nsys' \
		'/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys')
	export SANITIZER NCU NSYS
	{
		echo "host: $(uname -srm), $(nproc) cores, $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")"
		have nvidia-smi && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
			--format=csv,noheader 2>&1 | sed 's/^/gpu: /'
		have nvidia-smi && nvidia-smi 2>&1 | grep -o 'CUDA Version: [0-9.]*' | sed 's/^/driver /'
		local nvcc
		nvcc=$(find_tool nvcc /usr/local/cuda/bin/nvcc)
		echo "nvcc: ${nvcc:-none} $([[ -n $nvcc ]] && "$nvcc" --version | grep -o 'release [0-9.]*' | head -1)"
		echo "python: $PY ($("$PY" --version 2>&1))"
		timeout 60 "$PY" "$ROOT/scripts/gpu/torch_allreduce.py" --versions 2>&1 | tail -1 | sed 's/^/torch: /'
		echo "compute-sanitizer: ${SANITIZER:-none}"
		echo "ncu: ${NCU:-none}"
		echo "nsys: ${NSYS:-none}"
		echo "interfaces: $(ip -o -4 addr show 2>/dev/null | awk '{printf "%s %s; ", $2, $4}')"
	} >"$LOGS/env.txt" 2>&1
	cat "$LOGS/env.txt"
	cp "$LOGS/env.txt" "$WORK/versions.txt"
	gpu=$(grep -m1 '^gpu: ' "$LOGS/env.txt" | cut -d, -f1-2 | sed 's/^gpu: //')
	tv=$(grep -m1 '^torch: ' "$LOGS/env.txt" | sed 's/^torch: //')
	cuda=$(grep -m1 '^driver CUDA' "$LOGS/env.txt" | sed 's/^driver //')
	secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')
	if [[ $MODE == gpu && -z $gpu ]]; then
		record env FAIL "$secs" "nvidia-smi shows no GPU; torch: ${tv:-none}"
	else
		record env PASS "$secs" "${gpu:-no GPU (rehearsal)}${cuda:+, $cuda}; torch: ${tv:-not here}"
	fi
}

setup_configure() { # rehearsal: the CMake configure with CUDA the fallback build uses
	local t0 nvcc rc
	t0=$(now)
	nvcc=$(find_tool nvcc /usr/local/cuda/bin/nvcc)
	if [[ -z $nvcc ]]; then
		record configure SKIP 0 "no nvcc here"
		return
	fi
	timeout -k 5 90 cmake -S "$ROOT" -B "$WORK/cfg" -G Ninja -DCMAKE_BUILD_TYPE=Release \
		-DRINGWAY_WITH_CUDA=ON -DRINGWAY_BUILD_TESTS=OFF -DRINGWAY_WERROR=OFF \
		-DCMAKE_CUDA_COMPILER="$nvcc" >"$LOGS/configure.log" 2>&1
	rc=$?
	record configure "$([[ $rc == 0 ]] && echo DRY || echo FAIL)" \
		"$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')" \
		"$(grep -E '^-- +CUDA kernels' "$LOGS/configure.log" | sed 's/^-- *//; s/  */ /g')$([[ $rc != 0 ]] && echo "; exit $rc")"
}

setup_drivers() { # rehearsal: the Python drivers parse their arguments, report self-test
	local t0 rc=0
	t0=$(now)
	{
		"$PY" "$ROOT/scripts/gpu/torch_allreduce.py" --help &&
			"$PY" "$ROOT/scripts/gpu/report.py" self-test &&
			! "$PY" "$ROOT/scripts/gpu/torch_allreduce.py" --dtypes nosuch --dry-run
	} >"$LOGS/drivers.log" 2>&1 || rc=1
	record drivers "$([[ $rc == 0 ]] && echo DRY || echo FAIL)" \
		"$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')" \
		"torch_allreduce.py --help, bad args refused; report.py self-test"
}

usage() { sed -n '3,/^set -u/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; }

main() {
	if [[ ${1:-} == --run-step ]]; then # one step, in a child (run_step)
		shift
		"$@"
		exit $?
	fi
	MODE=gpu MPS=on OUT="" BUDGET=390 PREPARE=0 NOPREP=0 ONLY="" SKIP_RE="" BUILD_DIR="" KEEP=0 PAYLOAD=$GPUDIR/carry/payload.tar.gz
	while (($#)); do
		case $1 in
		--prepare) PREPARE=1 ;;
		--no-gpu) MODE=nogpu ;;
		--no-prepare) NOPREP=1 ;;
		--out) OUT=$2; shift ;;
		--budget) BUDGET=$2; shift ;;
		--payload) PAYLOAD=$2; shift ;;
		--only) ONLY=$2; shift ;;
		--skip) SKIP_RE=$2; shift ;;
		--build-dir) BUILD_DIR=$(cd "$2" && pwd); shift ;;
		--keep) KEEP=1 ;;
		--mps) MPS=$2; shift ;;
		-h | --help) usage; exit 0 ;;
		*) echo "gpu-check.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
		esac
		shift
	done
	if ((PREPARE)) && [[ $MODE == gpu ]]; then
		do_prepare
		exit $?
	fi
	export MODE ROOT SELF PY BUDGET
	T0=$(now)
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/rwgpu.XXXXXX")
	LOGS=$WORK/logs STEPS=$WORK/steps.tsv
	export WORK LOGS
	mkdir -p "$LOGS"
	: >"$STEPS"
	[[ -n $OUT ]] && mkdir -p "$OUT"
	log "mode $MODE, budget ${BUDGET}s, work $WORK, out ${OUT:-none}"

	if [[ $MODE == nogpu ]]; then
		if [[ ! -f $PAYLOAD ]] && ((NOPREP == 0)); then
			local t0
			t0=$(now)
			local st=PASS
			do_prepare >"$LOGS/prepare.log" 2>&1 || st=FAIL
			record prepare "$st" \
				"$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')" \
				"$(du -h "$PAYLOAD" 2>/dev/null | cut -f1) payload"
		elif [[ ! -f $PAYLOAD ]]; then
			record prepare SKIP 0 "no .gpu payload here and --no-prepare: steps that need it skip"
		else
			record prepare PASS 0 "reused $(du -h "$PAYLOAD" | cut -f1) $(basename "$PAYLOAD") from $(date -r "$PAYLOAD" +%F\ %T)"
		fi
	fi
	setup_env
	if [[ -f $PAYLOAD || $MODE == gpu ]]; then
		setup_payload
	elif [[ -n $BUILD_DIR ]]; then
		setup_builddir "$BUILD_DIR"
	else
		export RW_BIN=$WORK/none RW_LIB=$WORK/none RW_TESTS=$WORK/none
	fi
	if [[ $MODE == nogpu ]]; then
		setup_configure
		setup_drivers
	fi
	local have_bins=1
	[[ -x $RW_BIN/ringway-perf ]] || have_bins=0

	# name limit(s); order = priority when the budget runs short
	local steps=(
		unit-reduce-cuda:60 unit-shm-cuda:60 unit-coll-ring:60
		sanitizer-kernels:120 kernel-bench:60
		capi-shm-n2:60 capi-ipc-256m:45 capi-socket-n2:60 capi-shm-n4:75 capi-socket-n4:75
		torch-backend-cuda-n2:180
		nccl-socket-n2:60 nccl-rw-socket-n2:60 nccl-rw-auto-n2:60
		nccl-socket-n4:75 nccl-rw-socket-n4:75 nccl-rw-auto-n4:75
		collnet-chain-n4:60 profile-nvtx:100 collnet-direct-n4:45
		sanitizer-ipc:60 profile-ncu:45
	)
	local s name
	for s in "${steps[@]}"; do
		name=${s%%:*}
		if ((!have_bins)) && [[ $name != nccl-socket-* && $name != collnet-* ]]; then
			record "$name" SKIP 0 "no ringway binaries"
			continue
		fi
		if [[ $MODE == nogpu && $name =~ ^(sanitizer|profile-ncu) ]]; then
			record "$name" SKIP 0 "needs a GPU"
			continue
		fi
		[[ $name == capi-shm-n2 ]] && mps_start
		[[ $name == sanitizer-ipc ]] && mps_stop
		run_step "$name" "${s##*:}"
	done
	mps_stop

	# ---- summary ------------------------------------------------------------------
	local summary=$WORK/summary.txt
	{
		echo "# scripts/gpu-check.sh ($MODE) $(date -u +%FT%TZ), ringway $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo '(no git)')"
		cat "$WORK/versions.txt" 2>/dev/null
		[[ -f $WORK/payload/MANIFEST ]] && head -4 "$WORK/payload/MANIFEST" | sed 's/^/payload: /'
		echo
		[[ -f $LOGS/nccl/loadlines.txt ]] && { echo "## NCCL load lines"; cat "$LOGS/nccl/loadlines.txt"; echo; }
		for f in "$LOGS"/nccl/*.reasons.txt; do
			[[ -s $f ]] && { echo "## $(basename "$f" .reasons.txt): CollNet lines from NCCL"; head -12 "$f"; echo; }
		done
		[[ -f $LOGS/nvtx/perf-summary.txt ]] && { cat "$LOGS/nvtx/perf-summary.txt"; echo; }
		[[ -f $LOGS/nvtx/nccl-summary.txt ]] && { echo "under NCCL:"; cat "$LOGS/nvtx/nccl-summary.txt"; echo; }
		if [[ $MODE == gpu ]]; then
			grep -h '^dev ' "$LOGS/kernel-bench.log" 2>/dev/null && echo
			"$PY" "$ROOT/scripts/gpu/report.py" compare "$LOGS/nccl" 2>&1
			echo
		fi
		echo "## steps (logs/<step>.log; $(awk -v a="$T0" -v b="$(now)" 'BEGIN{printf "%.0f", b - a}') s in all)"
		"$PY" "$ROOT/scripts/gpu/report.py" table "$STEPS"
	} >"$summary" 2>&1
	cp "$STEPS" "$LOGS/steps.tsv"
	if [[ -n $OUT ]]; then
		cp "$summary" "$OUT/summary.txt"
		tar -czf "$OUT/logs.tar.gz" -C "$WORK" logs summary.txt 2>/dev/null
	fi
	echo
	cat "$summary"
	local failed=0
	cut -f2 "$STEPS" | grep -qE '^(FAIL|TIMEOUT)$' && failed=1
	if ((KEEP)); then log "work folder kept: $WORK"; else rm -rf "$WORK"; fi
	# exit 0 when nothing FAILed or timed out
	return $failed
}

main "$@"
