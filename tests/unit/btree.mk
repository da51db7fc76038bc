# unit tests of the btree work
