# unit tests of the codec work
