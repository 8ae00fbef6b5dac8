package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/dynamic-resource-allocation/api/metadata"
	"k8s.io/dynamic-resource-allocation/devicemetadata"
)

// decodeMetadata reads a KEP-5304 device metadata file the way a workload
// does, with the upstream decoder (first version it knows, validated), and
// prints one JSON line: the version it decoded, the validation error if any,
// and the decoded object (Go field names). Exit code 1 when decoding fails.
func decodeMetadata(path string) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "decode-metadata:", err)
		return 1
	}
	defer f.Close()
	var dm metadata.DeviceMetadata
	var gvk schema.GroupVersionKind
	var invalid error
	if err := devicemetadata.DecodeMetadataFromStream(json.NewDecoder(f), &dm,
		devicemetadata.DecodeMetadataStoreGVKResult(&gvk), devicemetadata.DecodeMetadataWithValidationResult(&invalid)); err != nil {
		fmt.Fprintln(os.Stderr, "decode-metadata:", err)
		return 1
	}
	validation := ""
	if invalid != nil {
		validation = invalid.Error()
	}
	line, _ := json.Marshal(map[string]any{"apiVersion": gvk.GroupVersion().String(), "validation": validation, "object": dm})
	fmt.Println(string(line))
	return 0
}
