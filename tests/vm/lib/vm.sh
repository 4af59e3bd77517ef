# vm.sh: Soft-RoCE test VMs on one machine; source it.
#
# Boots the host's own Debian kernel under qemu, virtme style: a tiny
# initramfs (static busybox + the virtio, 9p and overlay modules) mounts the
# host root read-only over virtio-9p under a tmpfs overlay, so the guest runs
# the host's binaries (rdma-core, perftest, the project's build) unchanged.
# Two VMs joined back to back by qemu's `-netdev dgram` over Unix sockets are
# two real RoCE nodes once `rdma link add rxe0 type rxe netdev eth0` ran in
# each (notes/soft-roce-vm.md).  Nothing leaves the machine: a VM has no NIC
# except that link, and the link's only other end is the other VM.
#
#   vm_unusable                     prints why VMs cannot run here (exit 0 when
#                                   they can: nothing printed)
#   vm_prepare                      builds (once) the cache: vmlinux + initramfs
#   vm_setup                        creates $VM_DIR (state) and the EXIT trap
#   vm_start NAME SCRIPT [LINK SIDE]  boots NAME running SCRIPT (bash) in the
#                                   guest; LINK names a back-to-back link, SIDE
#                                   is 0 or 1 (guest eth0 gets 10.77.L.(SIDE+1));
#                                   with VM_RAILS=R, R such links, each a rail
#                                   network of its own (ethK, 10.(77+K).L.(SIDE+1))
#   vm_wait NAME SECONDS            waits (bounded) for NAME to power off;
#                                   returns the guest script's exit status, 124
#                                   on timeout (the VM is killed), 125 when the
#                                   VM died without a status
#   vm_stop_all                     kills every VM still running, by recorded PID
#   vm_out NAME / vm_console NAME   paths of the script output / kernel console
#
# Inside the guest, SCRIPT runs as root with bash, cwd = the repository, and
#   IBP_VM_NAME, IBP_VM_INDEX (0-based start order), IBP_VM_COUNT (VMs of the
#   setup), IBP_VM_IP / IBP_VM_PEER_IP (on eth0, when linked), IBP_VM_RAILS
#   (links to the peer: eth0..ethR-1, see guest_rail_up), IBP_REPO,
#   IBP_SHARE (this VM's writable directory, also seen by the host at
#   $VM_DIR/NAME/share), IBP_SYNC (one directory shared by every VM of the
#   setup and the host: barriers, see guest.sh), IBP_GUEST_LIB (guest.sh),
#   plus every variable named in VM_PASS_ENV (space-separated) with its host
#   value.
# The repository ($VM_REPO, default: this checkout) and every directory in
# VM_EXTRA_PATHS are visible read-only at the same absolute path in the guest,
# wherever they live on the host (a checkout in /tmp/ci-clone included).
#
# Parameters (environment):
#   IBP_VM_CACHE    cache directory (/var/tmp/spank-ib-vm); one subdirectory
#                   per kernel version and harness revision, reused when complete
#   IBP_VM_KERNEL   kernel version (the newest /boot/vmlinuz-* with modules)
#   IBP_VM_ACCEL    tcg or kvm (auto: tcg when /dev/kvm is missing, not
#                   usable, or the nested kvm_pvm backend that cannot boot
#                   Debian's kernel)
#   IBP_VM_MEM      guest memory in MiB (768)
#   VM_BASEDIR      parent of the state directory (/tmp: socket paths are
#                   limited to 108 bytes)
#   VM_KEEP=1       keep the state directory after the run
#   VM_RAILS        back-to-back links per linked VM (1): each its own NIC and
#                   Unix socket pair, so two rails never reach each other
VM_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${VM_REPO:=$(cd "$VM_LIB/../../.." && pwd)}"
: "${IBP_VM_CACHE:=/var/tmp/spank-ib-vm}"
: "${IBP_VM_MEM:=768}"
: "${VM_BASEDIR:=/tmp}"
: "${VM_KEEP:=0}"
: "${VM_EXTRA_PATHS:=}"
: "${VM_PASS_ENV:=}"
: "${VM_RAILS:=1}"
VM_DIR=
VM_NAMES=()
VM_COUNT=0
declare -A VM_PID=()
# Modules the initramfs loads itself (dependencies resolved at build time).
VM_INITRD_MODULES="virtio_pci 9pnet_virtio 9p overlay virtio_net"

vm_log() { echo "# vm: $*" >&2; }

vm_kernel_version() {
	if [ -n "${IBP_VM_KERNEL:-}" ]; then
		echo "$IBP_VM_KERNEL"
		return
	fi
	local k v best=
	for k in /boot/vmlinuz-*; do
		[ -e "$k" ] || continue
		v=${k#/boot/vmlinuz-}
		[ -d "/lib/modules/$v/kernel" ] && best=$v
	done
	echo "$best"
}

vm_accel() {
	if [ -n "${IBP_VM_ACCEL:-}" ]; then
		echo "$IBP_VM_ACCEL"
		return
	fi
	# kvm_pvm: a nested backend that aborts on -cpu host and hangs the guest
	# otherwise (notes/soft-roce-vm.md); plain TCG is slower but boots.
	if [ -r /dev/kvm ] && [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ] &&
		{ [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
		echo kvm
	else
		echo tcg
	fi
}

vm_unusable() {
	local k
	command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"; return; }
	[ -r /usr/share/qemu/qboot.rom ] || { echo "/usr/share/qemu/qboot.rom missing (qemu-system-x86 firmware)"; return; }
	[ -x /bin/busybox ] || { echo "static busybox missing (apt-get install busybox-static)"; return; }
	# A dynamic binary has a program interpreter; the initramfs has no libraries.
	command -v readelf >/dev/null || { echo "readelf missing (apt-get install binutils)"; return; }
	! readelf -l /bin/busybox 2>/dev/null | grep -q 'program interpreter' ||
		{ echo "/bin/busybox is not statically linked (apt-get install busybox-static)"; return; }
	k=$(vm_kernel_version)
	[ -n "$k" ] || { echo "no kernel with modules under /boot (apt-get install linux-image-amd64)"; return; }
	[ -r "/boot/vmlinuz-$k" ] || { echo "/boot/vmlinuz-$k not readable"; return; }
	find "/lib/modules/$k/kernel/drivers/infiniband/sw/rxe" -name 'rdma_rxe.ko*' 2>/dev/null | grep -q . ||
		{ echo "kernel $k has no rdma_rxe module"; return; }
	command -v modprobe >/dev/null || { echo "modprobe missing (apt-get install kmod)"; return; }
	command -v cpio >/dev/null || { echo "cpio missing"; return; }
	command -v rdma >/dev/null || { echo "rdma (iproute2) missing"; return; }
	[ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] ||
		ls /usr/lib/*/libibverbs/librxe-rdmav*.so >/dev/null 2>&1 ||
		{ echo "the rxe verbs provider is missing (apt-get install ibverbs-providers)"; return; }
	[ "$(id -u)" -eq 0 ] || { echo "not root (the harness reads /boot and shares / with the guest)"; return; }
	return 0
}

# The ELF vmlinux inside a bzImage: find the compressed payload by its magic
# and decompress it (the kernel has CONFIG_PVH, so qemu boots the ELF through
# its PVH note, much faster than the bzImage real-mode path under TCG).
vm_extract_vmlinux() {
	local img=$1 out=$2 magic off tool
	for magic in xz gzip zstd; do
		case $magic in
		xz) off=$(LC_ALL=C grep -abo $'\xfd7zXZ' "$img" | head -1 | cut -d: -f1); tool="xz -dc" ;;
		gzip) off=$(LC_ALL=C grep -abo $'\x1f\x8b\x08' "$img" | head -1 | cut -d: -f1); tool="gzip -dc" ;;
		zstd) off=$(LC_ALL=C grep -abo $'\x28\xb5\x2f\xfd' "$img" | head -1 | cut -d: -f1); tool="zstd -dc" ;;
		esac
		[ -n "$off" ] || continue
		# Trailing data after the stream makes the decompressor complain:
		# the ELF check below is what decides.
		tail -c +$((off + 1)) "$img" | $tool >"$out" 2>/dev/null
		if [ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; then
			return 0
		fi
	done
	return 1
}

# Writes the initramfs /init.  Runs in busybox sh as PID 1.
vm_write_init() {
	cat >"$1" <<'EOF'
#!/bin/sh
# spank-ib test VM init (tests/vm/lib/vm.sh).  Mounts the host root
# read-only over 9p under a tmpfs overlay, runs the harness's script in it,
# writes the script's exit status to the share, powers off.
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
say() { echo "ibp-init: $*" >/dev/ttyS0; }
fail() { say "$*"; echo "ibp-init: $*" >/dev/ttyS1; poweroff -f; }
for m in $(cat /modules.order); do
	insmod "/lib/modules/$m" || say "insmod $m failed"
done
O=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /lower /rw /newroot
mount -t 9p -o "$O,ro,cache=loose" hostroot /lower || fail "cannot mount the host root over 9p"
mount -t tmpfs -o mode=0755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	fail "cannot mount the overlay root"
R=/newroot
mount -t proc proc $R/proc
mount -t sysfs sys $R/sys
mount -t devtmpfs dev $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts
mount -t tmpfs shm $R/dev/shm
mount -t tmpfs tmp $R/tmp
mount -t tmpfs -o mode=0755 run $R/run
mkdir -p $R/run/ibp $R/run/ibp-sync
mount -t 9p -o "$O" ibpshare $R/run/ibp || fail "cannot mount the share"
mount -t 9p -o "$O" ibpsync $R/run/ibp-sync || fail "cannot mount the sync directory"
# Host directories at their own paths (the repository, the build ...), read-only.
while read -r tag path; do
	[ -n "$tag" ] || continue
	mkdir -p "$R$path"
	mount -t 9p -o "$O,ro" "$tag" "$R$path" || fail "cannot mount $path ($tag)"
done <$R/run/ibp/mounts
hostname "$(cat $R/run/ibp/hostname)"
# Modules the kernel requests itself (crc32 for rxe ...) are looked up from
# the initramfs root: /sbin/modprobe here chroots into the real root.
chroot $R /bin/bash -c '. /run/ibp/env; cd "$IBP_REPO" && exec /bin/bash /run/ibp/guest.sh' \
	</dev/null >/dev/ttyS1 2>&1
echo $? >$R/run/ibp/rc
sync
umount $R/run/ibp 2>/dev/null
poweroff -f
EOF
	chmod 755 "$1"
}

vm_cache_dir() {
	local k h
	k=$(vm_kernel_version)
	# Keyed by kernel and by this file: a changed harness rebuilds its cache.
	h=$(cat "$VM_LIB/vm.sh" /bin/busybox | sha256sum | cut -c1-12)
	echo "$IBP_VM_CACHE/$k-$h"
}

vm_build_cache() {
	local dir=$1 k tmp m f
	k=$(vm_kernel_version)
	tmp=$(mktemp -d "$dir.tmp.XXXXXX") || return 1
	if ! vm_extract_vmlinux "/boot/vmlinuz-$k" "$tmp/vmlinux"; then
		vm_log "cannot extract an ELF vmlinux from /boot/vmlinuz-$k"
		rm -rf "$tmp"
		return 1
	fi
	local ird=$tmp/initramfs
	mkdir -p "$ird"/{bin,sbin,proc,sys,dev,lib/modules,newroot,lower,rw}
	cp /bin/busybox "$ird/bin/busybox"
	for f in sh mount umount insmod mkdir cat poweroff chroot hostname sync sleep echo ls; do
		ln -s busybox "$ird/bin/$f"
	done
	printf '#!/bin/sh\nexec /bin/chroot /newroot /sbin/modprobe "$@"\n' >"$ird/sbin/modprobe"
	chmod 755 "$ird/sbin/modprobe"
	: >"$ird/modules.order"
	for m in $VM_INITRD_MODULES; do
		modprobe --show-depends -S "$k" "$m" 2>/dev/null | awk '$1 == "insmod" { print $2 }'
	done | awk '!seen[$0]++' | while read -r f; do
		# Uncompressed copies: busybox insmod has no xz/zstd.
		local base
		base=$(basename "$f")
		case $f in
		*.ko.xz) xz -dc "$f" >"$ird/lib/modules/${base%.xz}"; base=${base%.xz} ;;
		*.ko.zst) zstd -dc "$f" >"$ird/lib/modules/${base%.zst}"; base=${base%.zst} ;;
		*) cp "$f" "$ird/lib/modules/$base" ;;
		esac
		echo "$base" >>"$ird/modules.order"
	done
	if [ "$(wc -l <"$ird/modules.order")" -lt 5 ]; then
		vm_log "cannot resolve the initramfs modules ($VM_INITRD_MODULES) for kernel $k"
		rm -rf "$tmp"
		return 1
	fi
	vm_write_init "$ird/init"
	(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$tmp/initramfs.cpio.gz" || {
		rm -rf "$tmp"
		return 1
	}
	rm -rf "$ird"
	echo "$k" >"$tmp/kernel"
	: >"$tmp/complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	# Caches of older revisions of this harness for the same kernel (a
	# running VM has already read its kernel and initramfs).
	local old
	for old in "${dir%-*}"-*; do
		[ "$old" = "$dir" ] || [ ! -d "$old" ] || case $old in *.tmp.*) ;; *) rm -rf "$old" ;; esac
	done
}

# Prints the cache directory; builds it under a lock when it is not complete.
vm_prepare() {
	local dir
	dir=$(vm_cache_dir)
	mkdir -p "$IBP_VM_CACHE" || return 1
	if [ ! -e "$dir/complete" ]; then
		(
			flock -w 300 9 || { vm_log "timed out waiting for the cache lock"; exit 1; }
			[ -e "$dir/complete" ] && exit 0
			vm_log "building the VM cache in $dir"
			vm_build_cache "$dir"
		) 9>"$IBP_VM_CACHE/.lock" || return 1
	fi
	echo "$dir"
}

vm_setup() {
	[ -n "$VM_DIR" ] && return 0
	VM_CACHE_DIR=$(vm_prepare) || return 1
	VM_DIR=$(mktemp -d "$VM_BASEDIR/ibpvm.XXXXXX") || return 1
	mkdir -p "$VM_DIR/sync"
	trap vm_stop_all EXIT
}

vm_out() { echo "$VM_DIR/$1/out.log"; }
vm_console() { echo "$VM_DIR/$1/console.log"; }

vm_start() {
	local name=$1 script=$2 link=${3:-} side=${4:-0}
	local d=$VM_DIR/$name accel k i tag path
	[ -n "$VM_DIR" ] || { vm_log "vm_start before vm_setup"; return 1; }
	[ -r "$script" ] || { vm_log "guest script $script not readable"; return 1; }
	mkdir -p "$d/share"
	cp "$script" "$d/share/guest.sh"
	echo "$name" >"$d/share/hostname"
	local -a virtfs=() net=() paths=()
	paths=("$VM_REPO")
	for path in $VM_EXTRA_PATHS; do
		path=$(cd "$path" 2>/dev/null && pwd) || continue
		paths+=("$path")
	done
	: >"$d/share/mounts"
	i=0
	for path in "${paths[@]}"; do
		tag=ibpdir$i
		echo "$tag $path" >>"$d/share/mounts"
		virtfs+=(-virtfs "local,path=$path,mount_tag=$tag,security_model=none,readonly=on,multidevs=remap")
		i=$((i + 1))
	done
	{
		printf 'export IBP_VM_NAME=%q IBP_VM_INDEX=%q IBP_VM_COUNT=%q IBP_REPO=%q\n' \
			"$name" "${#VM_NAMES[@]}" "${VM_COUNT:-0}" "$VM_REPO"
		printf 'export IBP_SHARE=/run/ibp IBP_SYNC=/run/ibp-sync IBP_GUEST_LIB=%q\n' "$VM_LIB/guest.sh"
		printf 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root\n'
		if [ -n "$link" ]; then
			printf 'export IBP_VM_IP=10.77.%d.%d IBP_VM_PEER_IP=10.77.%d.%d IBP_VM_RAILS=%d\n' \
				"$link" $((side + 1)) "$link" $((2 - side)) "$VM_RAILS"
		fi
		local v
		for v in $VM_PASS_ENV; do
			[ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
		done
	} >"$d/share/env"
	if [ -n "$link" ]; then
		# Back to back: each side binds its own socket and sends to the other's.
		local a b r
		for ((r = 0; r < VM_RAILS; r++)); do
			a=$VM_DIR/l$link.r$r.$side.sock b=$VM_DIR/l$link.r$r.$((1 - side)).sock
			rm -f "$a"
			net+=(-device "virtio-net-pci,netdev=n$r,mac=52:54:00:$((77 + r)):$(printf %02x "$link"):0$((side + 1))"
				-netdev "dgram,id=n$r,local.type=unix,local.path=$a,remote.type=unix,remote.path=$b")
		done
	fi
	accel=$(vm_accel)
	local -a cpu=(-cpu max)
	[ "$accel" = kvm ] && cpu=(-cpu host)
	k=$VM_CACHE_DIR
	qemu-system-x86_64 -name "ibp-$name" -machine "pc,accel=$accel" "${cpu[@]}" -smp 1 \
		-m "$IBP_VM_MEM" -nodefaults -no-user-config -display none -no-reboot \
		-bios /usr/share/qemu/qboot.rom -kernel "$k/vmlinux" -initrd "$k/initramfs.cpio.gz" \
		-append "console=ttyS0 panic=-1 loglevel=4 rdinit=/init tsc=reliable" \
		-serial "file:$d/console.log" -serial "file:$d/out.log" \
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
		-virtfs "local,path=$d/share,mount_tag=ibpshare,security_model=none" \
		-virtfs "local,path=$VM_DIR/sync,mount_tag=ibpsync,security_model=none" \
		"${virtfs[@]}" "${net[@]}" >"$d/qemu.log" 2>&1 </dev/null &
	VM_PID[$name]=$!
	echo "${VM_PID[$name]}" >"$d/qemu.pid"
	VM_NAMES+=("$name")
	vm_log "$name: qemu pid ${VM_PID[$name]} ($accel)"
}

vm_running() {
	local pid=${VM_PID[$1]:-}
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

vm_kill() {
	local name=$1 pid=${VM_PID[$1]:-} i
	[ -n "$pid" ] || return 0
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for i in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	unset "VM_PID[$name]"
}

vm_wait() {
	local name=$1 secs=$2 d=$VM_DIR/$1 end
	end=$(($(date +%s) + secs))
	while vm_running "$name"; do
		if [ "$(date +%s)" -ge "$end" ]; then
			vm_log "$name: still running after ${secs}s: killing qemu pid ${VM_PID[$name]}"
			vm_kill "$name"
			return 124
		fi
		sleep 0.5
	done
	wait "${VM_PID[$name]}" 2>/dev/null
	unset "VM_PID[$name]"
	if [ -s "$d/share/rc" ]; then
		return "$(cat "$d/share/rc")"
	fi
	vm_log "$name: powered off without an exit status; console tail:"
	tail -n 20 "$d/console.log" 2>/dev/null | sed 's/^/#   /' >&2
	tail -n 5 "$d/qemu.log" 2>/dev/null | sed 's/^/#   qemu: /' >&2
	return 125
}

vm_stop_all() {
	local n
	for n in "${!VM_PID[@]}"; do
		vm_kill "$n"
	done
	if [ -n "$VM_DIR" ] && [ "$VM_KEEP" != 1 ]; then
		rm -rf "$VM_DIR"
	elif [ -n "$VM_DIR" ]; then
		vm_log "state kept in $VM_DIR"
	fi
	VM_DIR=
}

# Boots two linked VMs (vm0 and vm1) running SCRIPT0 and SCRIPT1 and waits for
# both (bounded by SECONDS).  Sets VM_RC0 / VM_RC1.
vm_run_pair() {
	local s0=$1 s1=$2 secs=$3
	VM_COUNT=2
	vm_start vm0 "$s0" 1 0 || return 1
	vm_start vm1 "$s1" 1 1 || return 1
	vm_wait vm0 "$secs"
	VM_RC0=$?
	# vm1 had the same budget, running alongside.
	vm_wait vm1 30
	VM_RC1=$?
}
