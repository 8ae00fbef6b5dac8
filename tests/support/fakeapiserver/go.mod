module dra-cpp/fakeapiserver

go 1.22
