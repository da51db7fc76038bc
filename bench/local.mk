EXTRA_DIST += bench/README bench/lib.sh bench/ddread
EXTRA_DIST += bench/reserved bench/requests bench/fuzz
EXTRA_DIST += bench/write bench/seqwrite bench/rwloop bench/tree bench/size bench/hostsize bench/falloc
EXTRA_DIST += bench/remote bench/remote-s3 bench/tar
EXTRA_DIST += bench/nullfuse.c bench/codecfloor.c
