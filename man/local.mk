# Man pages: the format (czfs.5) and one page per tool.
dist_man_MANS += man/czfs.5 man/mkfs.czfs.8 man/czfs-fuse.1
dist_man_MANS += man/czfs-stat.1
dist_man_MANS += man/fsck.czfs.8 man/dump.czfs.8
dist_man_MANS += man/mount.czfs.8
dist_man_MANS += man/mount.fuse.czfs.8 man/umount.fuse.czfs.8
