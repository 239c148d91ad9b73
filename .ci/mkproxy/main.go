// Command mkproxy writes a module proxy, in the layout GOPROXY=file://dir
// reads, that serves modules of this repository at one version.
// .ci/release-check uses it to install the modules as a user would, before
// anything is tagged.
//
//	go run ./.ci/mkproxy -dir DIR -version vX.Y.Z MODULEDIR[@REV]...
//
// Each MODULEDIR (relative to the repository root, "." for the library) is
// served as its go.mod names it: from the working tree, its files being those
// git tracks or would track (untracked ones that .gitignore leaves in); or,
// with @REV, from that git revision (a tag, say), its tracked files there.
// Either way the directories of nested modules are left out, as the go command
// leaves them out of a module's zip.
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
		log.Fatal("usage: mkproxy -dir DIR -version vX.Y.Z MODULEDIR[@REV]...")
	}
	for _, arg := range flag.Args() {
		moddir, rev, _ := strings.Cut(arg, "@")
		src := source{dir: path.Clean(filepath.ToSlash(moddir)), rev: rev}
		if err := serve(*dir, *version, src); err != nil {
			log.Fatalf("%s: %v", arg, err)
		}
	}
}

// A source is a module's directory, in the working tree or at a revision.
type source struct {
	dir string // slash-separated, relative to the repository root
	rev string // "" for the working tree
}

// read returns the content of the file at name, relative to the module.
func (s source) read(name string) ([]byte, error) {
	if s.rev == "" {
		return os.ReadFile(filepath.Join(filepath.FromSlash(s.dir), filepath.FromSlash(name)))
	}
	return git("show", s.rev+":"+path.Join(s.dir, name))
}

// files lists the module's files, relative to it: those git knows (or would
// add, in the working tree) less nested modules' trees, vendor directories,
// and, in the working tree, files deleted or not regular.
func (s source) files() ([]string, error) {
	var out []byte
	var err error
	if s.rev == "" {
		out, err = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", s.dir)
	} else {
		out, err = git("ls-tree", "-r", "-z", "--name-only", s.rev, "--", s.dir)
	}
	if err != nil {
		return nil, err
	}
	var all []string
	for _, f := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		rel := f
		if s.dir != "." {
			rel = strings.TrimPrefix(f, s.dir+"/")
		}
		all = append(all, rel)
	}
	// A directory below the module's root that holds a go.mod is another
	// module.
	nested := map[string]bool{}
	for _, f := range all {
		if path.Base(f) == "go.mod" && path.Dir(f) != "." {
			nested[path.Dir(f)] = true
		}
	}
	inNested := func(f string) bool {
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			if nested[d] {
				return true
			}
		}
		return false
	}
	var files []string
	for _, f := range all {
		if inNested(f) || strings.HasPrefix(f, "vendor/") || strings.Contains(f, "/vendor/") {
			continue
		}
		if s.rev == "" {
			st, err := os.Lstat(filepath.Join(filepath.FromSlash(s.dir), filepath.FromSlash(f)))
			if errors.Is(err, fs.ErrNotExist) || (err == nil && !st.Mode().IsRegular()) {
				continue // deleted, or a symlink: the go command skips them too
			}
			if err != nil {
				return nil, err
			}
		}
		files = append(files, f)
	}
	return files, nil
}

func git(args ...string) ([]byte, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, exit.Stderr)
		}
		return nil, fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return out, nil
}

var modulePath = regexp.MustCompile(`(?m)^module\s+("?)([^\s"]+)("?)\s*$`)

// serve writes list, .info, .mod and .zip of the module of src.
func serve(proxy, version string, src source) error {
	gomod, err := src.read("go.mod")
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
	files, err := src.files()
	if err != nil {
		return err
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	prefix := mod + "@" + version + "/"
	for _, f := range files {
		data, err := src.read(f)
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
	from := "the working tree"
	if src.rev != "" {
		from = src.rev
	}
	fmt.Printf("served %s@%s from %s (%d files)\n", mod, version, from, len(files))
	return nil
}
