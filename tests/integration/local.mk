# mounted integration tests
