# unit tests of the space work
