# mkfs command-line and image tests
