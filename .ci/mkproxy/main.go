// Command mkproxy writes a module proxy, in the layout GOPROXY=file://dir
// reads, that serves modules of this repository's working tree at one
// version. .ci/release-check uses it to install the modules as a user would,
// before anything is tagged.
//
//	go run ./.ci/mkproxy -dir DIR -version vX.Y.Z MODULEDIR...
//
// Each MODULEDIR (relative to the repository root, "." for the library) is
// served as its go.mod names it. Its files are those git tracks or would track
// (untracked ones that .gitignore leaves in), less the directories of nested
// modules, as the go command leaves them out of a module's zip.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("mkproxy: ")
	dir := flag.String("dir", "", "the proxy's root directory (created)")
	version := flag.String("version", "", "the version served, vX.Y.Z")
	flag.Parse()
	if *dir == "" || !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(*version) || flag.NArg() == 0 {
		log.Fatal("usage: mkproxy -dir DIR -version vX.Y.Z MODULEDIR...")
	}
	for _, m := range flag.Args() {
		if err := serve(*dir, *version, m); err != nil {
			log.Fatalf("%s: %v", m, err)
		}
	}
}

var modulePath = regexp.MustCompile(`(?m)^module\s+("?)([^\s"]+)("?)\s*$`)

// serve writes list, .info, .mod and .zip of the module in moddir.
func serve(proxy, version, moddir string) error {
	gomod, err := os.ReadFile(filepath.Join(moddir, "go.mod"))
	if err != nil {
		return err
	}
	m := modulePath.FindSubmatch(gomod)
	if m == nil {
		return fmt.Errorf("go.mod names no module")
	}
	mod := string(m[2])
	if strings.ToLower(mod) != mod {
		return fmt.Errorf("module path %s has upper case letters, which the proxy escapes: not supported", mod)
	}
	files, err := moduleFiles(moddir)
	if err != nil {
		return err
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	prefix := mod + "@" + version + "/"
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(moddir, f))
		if err != nil {
			return err
		}
		w, err := zw.Create(prefix + f)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	info, _ := json.Marshal(struct{ Version, Time string }{version, time.Now().UTC().Format(time.RFC3339)})

	at := filepath.Join(proxy, filepath.FromSlash(mod), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  gomod,
		version + ".zip":  zbuf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("served %s@%s (%d files)\n", mod, version, len(files))
	return nil
}

// moduleFiles lists the files of the module in moddir, slash-separated and
// relative to it: those git knows or would add, less nested modules' trees,
// vendor directories, and files deleted from the work tree.
func moduleFiles(moddir string) ([]string, error) {
	out, err := exec.Command("git", "-C", moddir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", ".").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %v", err)
	}
	nested := map[string]bool{} // directories (slash paths) that hold another module
	isNested := func(dir string) bool {
		for d := dir; d != "." && d != "/" && d != ""; d = path.Dir(d) {
			if v, ok := nested[d]; ok {
				if v {
					return true
				}
				continue
			}
			_, err := os.Stat(filepath.Join(moddir, filepath.FromSlash(d), "go.mod"))
			nested[d] = err == nil
			if nested[d] {
				return true
			}
		}
		return false
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if f == "" || isNested(path.Dir(f)) || strings.HasPrefix(f, "vendor/") || strings.Contains(f, "/vendor/") {
			continue
		}
		st, err := os.Lstat(filepath.Join(moddir, filepath.FromSlash(f)))
		if err != nil || !st.Mode().IsRegular() {
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			continue // deleted, a symlink or not a file: the go command skips them too
		}
		files = append(files, f)
	}
	return files, nil
}
