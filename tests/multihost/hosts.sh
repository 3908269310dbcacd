# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# "Hosts" made of Linux namespaces, for tests/multihost/multihost.sh and
# bench/multihost_links.sh (sourced, not run).
#
# A host is a network namespace PREFIX-hI whose NICs are veths named like a
# topology fixture's netdevs (ib0, ib1, ...); rail K is a bridge in the
# switch namespace PREFIX-sw joining every host's K-th NIC, addresses
# 10.80.K.(I+1)/24.  A rank is started in its host's network namespace and
# in a UTS namespace of its own whose hostname is the host's name, so two
# ranks of one host share a network namespace and a hostname (what
# ringway's host identity reads) and ranks of different hosts share neither.
# The host's own interfaces are never touched; everything lives in
# namespaces named PREFIX-*, removed by mh_teardown.
#
#   mh_unusable                 why namespaces cannot be made here ("" if they can)
#   mh_setup PREFIX NHOSTS "NIC..." [RATE]   e.g. mh_setup rwmh-1 2 "ib0 ib1"
#   mh_addr HOST RAIL           the address of host HOST's RAIL-th NIC
#   mh_exec HOST HOSTNAME CMD...  run CMD on a host (netns + its own UTS ns)
#   mh_bytes HOST NIC           bytes sent + received by host HOST's NIC
#   mh_teardown                 remove what mh_setup made
#   mh_reap_stale BASE          remove BASE-<pid>-* namespaces of dead pids

mh_prefix=
mh_nhosts=0
mh_nics=()

mh_unusable() {
	local probe
	[[ $(id -u) == 0 ]] || { echo "needs root (network namespaces, veth)"; return; }
	for tool in ip tc unshare hostname timeout; do
		command -v "$tool" >/dev/null 2>&1 || { echo "no '$tool' command"; return; }
	done
	probe=rwmh-$$-probe
	if ! ip netns add "$probe" 2>/dev/null; then
		echo "'ip netns add' fails here (no CAP_SYS_ADMIN or no /run/netns)"
		return
	fi
	if ! ip -n "$probe" link add a0 type veth peer name a1 2>/dev/null; then
		ip netns del "$probe" 2>/dev/null
		echo "cannot make a veth pair (no veth in the kernel?)"
		return
	fi
	if ! ip netns exec "$probe" unshare --uts hostname rwmh-probe 2>/dev/null; then
		ip netns del "$probe" 2>/dev/null
		echo "cannot enter a network namespace with a UTS namespace of its own"
		return
	fi
	ip netns del "$probe" 2>/dev/null
	echo ""
}

# Namespaces of runs killed before their trap ran (a CTest timeout kills
# with SIGKILL): BASE-<pid>-... whose pid is gone.
mh_reap_stale() {
	local base=$1 ns pid
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
		[[ $ns == "$base"-* ]] || continue
		pid=${ns#"$base"-}
		pid=${pid%%-*}
		[[ $pid =~ ^[0-9]+$ ]] || continue
		kill -0 "$pid" 2>/dev/null && continue
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
}

mh_addr() { echo "10.80.$2.$(($1 + 1))"; }

# mh_setup PREFIX NHOSTS "NIC..." [RATE]: RATE (tc syntax, "1gbit") shapes
# each host's every NIC in both directions, as a NIC of that speed would.
mh_setup() {
	local rate=${4:-} h k nic
	mh_prefix=$1
	mh_nhosts=$2
	read -r -a mh_nics <<<"$3"
	ip netns add "$mh_prefix-sw" || return 1
	ip -n "$mh_prefix-sw" link set lo up
	for ((k = 0; k < ${#mh_nics[@]}; k++)); do
		ip -n "$mh_prefix-sw" link add "rail$k" type bridge || return 1
		ip -n "$mh_prefix-sw" link set "rail$k" up
	done
	for ((h = 0; h < mh_nhosts; h++)); do
		ip netns add "$mh_prefix-h$h" || return 1
		ip -n "$mh_prefix-h$h" link set lo up
		for ((k = 0; k < ${#mh_nics[@]}; k++)); do
			nic=${mh_nics[k]}
			ip -n "$mh_prefix-h$h" link add "$nic" type veth peer name "h${h}r$k" \
				netns "$mh_prefix-sw" || return 1
			ip -n "$mh_prefix-h$h" addr add "$(mh_addr "$h" "$k")/24" dev "$nic"
			ip -n "$mh_prefix-h$h" link set "$nic" mtu 9000 up
			ip -n "$mh_prefix-sw" link set "h${h}r$k" mtu 9000 master "rail$k" up
			if [[ -n $rate ]]; then
				# out of the host, and into it (the switch port's egress)
				tc -n "$mh_prefix-h$h" qdisc add dev "$nic" root tbf rate "$rate" \
					burst 1mb latency 100ms || return 1
				tc -n "$mh_prefix-sw" qdisc add dev "h${h}r$k" root tbf rate "$rate" \
					burst 1mb latency 100ms || return 1
			fi
		done
	done
}

# mh_exec HOST HOSTNAME CMD...: CMD in host HOST's network namespace, with
# its own UTS namespace named HOSTNAME (exec'd: $! is CMD's pid's parent
# chain only until the exec, then CMD itself).
mh_exec() {
	local h=$1 name=$2
	shift 2
	# shellcheck disable=SC2016 # expanded by that sh
	ip netns exec "$mh_prefix-h$h" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$name" "$@"
}

mh_bytes() {
	local d=/sys/class/net/$2/statistics
	ip netns exec "$mh_prefix-h$1" sh -c "echo \$((\$(cat $d/rx_bytes) + \$(cat $d/tx_bytes)))"
}

mh_teardown() {
	local h
	[[ -n $mh_prefix ]] || return 0
	for ((h = 0; h < mh_nhosts; h++)); do
		ip netns pids "$mh_prefix-h$h" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$mh_prefix-h$h" 2>/dev/null || true
	done
	ip netns del "$mh_prefix-sw" 2>/dev/null || true
	mh_prefix=
}
