# Mount helpers, installed where mount(8) and umount(8) look for them
# (--with-mount-helper-dir, default /sbin): mount.czfs for `mount -t czfs`
# and fstab, mount.fuse.czfs (a link to it) for remounts of the fuse.czfs
# mounts it makes, umount.fuse.czfs to wait for the daemon at umount.
mounthelperdir = @mounthelperdir@
mounthelper_PROGRAMS = mount/mount.czfs mount/umount.fuse.czfs
MOUNT_HELPER_SOURCES = mount/helper.c mount/helper.h
mount_mount_czfs_SOURCES = mount/mount_czfs.c $(MOUNT_HELPER_SOURCES)
mount_mount_czfs_CPPFLAGS = $(AM_CPPFLAGS) \
	-DCZFS_FUSE_PATH=\"$(bindir)/czfs-fuse\"
mount_umount_fuse_czfs_SOURCES = mount/umount_czfs.c $(MOUNT_HELPER_SOURCES)

# mount(8) runs mount.<type> for the type it is asked for (czfs), and for
# a remount the type the kernel shows (fuse.czfs): one program, two names.
install-exec-hook: install-mount-links
install-mount-links:
	cd $(DESTDIR)$(mounthelperdir) && $(LN_S) -f mount.czfs mount.fuse.czfs
uninstall-hook:
	rm -f $(DESTDIR)$(mounthelperdir)/mount.fuse.czfs
# The build tree's own link, for the mounted tests.
all-local: mount/mount.fuse.czfs
mount/mount.fuse.czfs: mount/mount.czfs
	$(AM_V_GEN)$(LN_S) -f mount.czfs $@
CLEANFILES += mount/mount.fuse.czfs
