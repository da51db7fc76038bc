EXTRA_DIST += bench/lib.sh bench/ddread
