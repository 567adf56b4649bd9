// Dumps the protobuf schema kubecache transcodes JSON objects with, read
// by reflection off the Go types a v1.20 kube-apiserver serves. Run by
// schema.sh, which builds it inside the real apiserver's source tree.
//
// Each message is its struct's fields that have a protobuf tag, in the
// struct's declaration order (the order Go's encoding/json writes them
// in), as [json name ("" when inlined), field number, cardinality, type,
// omitempty], and the JSON keys of untagged fields (TypeMeta's) as
// [key, 0, "-", "", false]:
//   - cardinality "1": always written, as gogo writes a non-pointer field;
//     "?": a pointer or byte slice, written when present and not null;
//     "*": repeated; "map": a map with string keys, written sorted.
//   - type: string, bytes, int (signed varint), uint, bool, time,
//     double, microtime, quantity, intorstr, raw (a message of the value's JSON
//     bytes), items (a named string slice: a message of repeated items),
//     orarray:<m>, orbool:<m>, orstrings:<m> (a CRD schema's
//     JSONSchemaPropsOr{Array,Bool,StringArray} unions of the message m),
//     unsupported:<name>, or another message's name.
//   - omitempty: whether the json tag says omitempty (Go's JSON then leaves
//     out a false, 0, "", nil pointer, or empty slice or map).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
)

type field []interface{}

var messages = map[string][]field{}

var special = map[string]string{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":         "time",
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime":    "microtime",
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":     "raw",
	"k8s.io/apimachinery/pkg/runtime.RawExtension":      "raw",
	"k8s.io/apimachinery/pkg/api/resource.Quantity":     "quantity",
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString":   "intorstr",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":     "unsupported:Duration",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON":      "raw",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1.JSON": "raw",
}

// A CRD schema's unions, which marshal to JSON as one of their fields.
var unions = map[string]string{
	"JSONSchemaPropsOrArray":       "orarray",
	"JSONSchemaPropsOrBool":        "orbool",
	"JSONSchemaPropsOrStringArray": "orstrings",
}

func name(t reflect.Type) string {
	p := strings.TrimPrefix(t.PkgPath(), "k8s.io/kubernetes/vendor/")
	return strings.TrimPrefix(p, "k8s.io/") + "." + t.Name()
}

func fullName(t reflect.Type) string {
	return strings.TrimPrefix(t.PkgPath(), "k8s.io/kubernetes/vendor/") + "." + t.Name()
}

// typeOf names what a value of t is written as, walking structs it meets.
func typeOf(t reflect.Type) string {
	if s, ok := special[fullName(t)]; ok {
		return s
	}
	if u, ok := unions[t.Name()]; ok {
		// Custom JSON (un)marshalling picks the union's field by the
		// value's JSON type: kubecache reads it the same way.
		props, _ := t.FieldByName("Schema")
		return u + ":" + typeOf(props.Type.Elem())
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "int"
	case reflect.Uint32, reflect.Uint64, reflect.Uint8, reflect.Uint16:
		return "uint"
	case reflect.Float64:
		return "double"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		if t.Name() != "" && t.Elem().Kind() == reflect.String {
			return "items"
		}
	case reflect.Struct:
		walk(t)
		return name(t)
	}
	return "unsupported:" + t.String()
}

func walk(t reflect.Type) {
	n := name(t)
	if _, ok := messages[n]; ok {
		return
	}
	messages[n] = nil // a recursive type refers to itself
	fields := []field{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("protobuf")
		if tag == "" || tag == "-" {
			// In the JSON but not in the message: TypeMeta's keys.
			for _, k := range jsonKeys(f) {
				fields = append(fields, field{k, 0, "-", "", false})
			}
			continue
		}
		parts := strings.Split(tag, ",")
		num, err := strconv.Atoi(parts[1])
		if err != nil {
			panic(fmt.Sprintf("%s.%s: %q", n, f.Name, tag))
		}
		jsonTag := strings.Split(f.Tag.Get("json"), ",")
		j := jsonTag[0]
		omitempty := false
		for _, o := range jsonTag[1:] {
			omitempty = omitempty || o == "omitempty"
		}
		if j == "-" {
			panic(fmt.Sprintf("%s.%s has no JSON", n, f.Name))
		}
		ft := f.Type
		card := "1"
		switch {
		case ft.Kind() == reflect.Ptr:
			card, ft = "?", ft.Elem()
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8:
			card = "?"
		case ft.Kind() == reflect.Map:
			if ft.Key().Kind() != reflect.String {
				panic(fmt.Sprintf("%s.%s: map key %s", n, f.Name, ft.Key()))
			}
			card, ft = "map", ft.Elem()
		case ft.Kind() == reflect.Slice && special[fullName(ft)] == "":
			card, ft = "*", ft.Elem()
		}
		fields = append(fields, field{j, num, card, typeOf(ft), omitempty})
	}
	messages[n] = fields
}

// The JSON keys an untagged field holds: its own, or an inlined struct's.
func jsonKeys(f reflect.StructField) []string {
	j := strings.Split(f.Tag.Get("json"), ",")[0]
	if j == "-" {
		return nil
	}
	if j != "" || f.Type.Kind() != reflect.Struct {
		return []string{j}
	}
	var keys []string
	for i := 0; i < f.Type.NumField(); i++ {
		keys = append(keys, jsonKeys(f.Type.Field(i))...)
	}
	return keys
}

func main() {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		scheme.AddToScheme, apiextv1.AddToScheme, apiextv1beta1.AddToScheme,
		apiregv1.AddToScheme, apiregv1beta1.AddToScheme, metav1.AddMetaToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	kinds := map[string]string{}
	for gvk, t := range s.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || t.Kind() != reflect.Struct {
			continue
		}
		// Options and other kinds that are not objects of resources.
		if _, ok := reflect.New(t).Interface().(interface{ Marshal() ([]byte, error) }); !ok {
			continue
		}
		walk(t)
		kinds[schema.GroupVersion{Group: gvk.Group, Version: gvk.Version}.String()+"/"+gvk.Kind] = name(t)
	}
	out, err := json.Marshal(map[string]interface{}{"kinds": kinds, "messages": messages})
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(out)
}
