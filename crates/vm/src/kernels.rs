//! Guest kernels: finding one by name or path, telling its architecture
//! and release, listing what is available, and building one from a source
//! tree with the project's configuration fragments.
//!
//! A kernel is a folder holding the image (`bzImage` for x86_64, `Image`
//! for arm64) and, ideally, the `config` it was built with. Folders are
//! looked up by name in, in order: the directories of `FOLIOSIM_KERNELS`
//! (colon-separated), the cache `~/.cache/foliosim/kernels`
//! (`$XDG_CACHE_HOME` if set), and `shared/kernels` next to the checkout
//! foliosim was built from.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use foliosim_uapi::Arch;

/// The configuration fragments `kernel build` merges, kept in the
/// repository (crates/vm/kconfig) and documented in docs/vm.md.
pub const FRAGMENT_MM: &str = include_str!("../kconfig/mm.config");
pub const FRAGMENT_X86_64: &str = include_str!("../kconfig/x86_64.config");
pub const FRAGMENT_ARM64: &str = include_str!("../kconfig/arm64.config");

/// Driver families an arm64 `defconfig` build leaves out (a guest needs
/// a serial console, virtio and PCI; the rest only costs build time).
const ARM64_DISABLE: &[&str] = &[
    "DRM",
    "SOUND",
    "SND",
    "WLAN",
    "USB_SUPPORT",
    "MEDIA_SUPPORT",
    "STAGING",
    "NETDEVICES",
    "INPUT_TOUCHSCREEN",
    "MMC",
    "SCSI",
    "ATA",
    "MTD",
    "IIO",
    "REGULATOR",
    "PINCTRL_MSM",
    "ARCH_QCOM",
    "ARCH_ROCKCHIP",
    "ARCH_MEDIATEK",
    "ARCH_EXYNOS",
    "ARCH_TEGRA",
    "ARCH_MESON",
    "ARCH_SUNXI",
    "ARCH_RENESAS",
    "ARCH_MXC",
    "ARCH_HISI",
    "ARCH_BCM",
    "ARCH_K3",
    "ARCH_NXP",
    "ARCH_APPLE",
    "BT",
    "CAN",
    "NFC",
    "WIRELESS",
    "CFG80211",
    "INFINIBAND",
    "VFIO",
    "KVM",
    "XEN",
    "SPI",
    "I2C",
    "GPIO_SYSFS",
    "HWMON",
    "THERMAL",
    "PWM",
    "REMOTEPROC",
    "RPMSG",
    "SOC_TI",
    "FPGA",
    "DEBUG_INFO",
    "DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT",
    "DEBUG_INFO_DWARF5",
    "BPF_SYSCALL",
    "NUMA",
];

/// A bootable kernel.
#[derive(Clone, Debug)]
pub struct KernelImage {
    /// The folder's name (`6.18.35-arm64`) or the image's file name.
    pub name: String,
    pub image: PathBuf,
    pub arch: Arch,
    /// `uname -r` of the kernel, from its config or image ("" if unknown).
    pub release: String,
    /// The `.config` it was built with, when it is next to the image.
    pub config: Option<String>,
}

impl KernelImage {
    /// Whether the kernel was built with CONFIG_`opt`=y (None: no config).
    pub fn has(&self, opt: &str) -> Option<bool> {
        let c = self.config.as_ref()?;
        let want = format!("CONFIG_{opt}=y");
        Some(c.lines().any(|l| l.trim() == want))
    }
}

/// The directories searched for kernels by name, in order.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::env::var("FOLIOSIM_KERNELS")
        .map(|v| {
            v.split(':')
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    out.push(cache_dir().join("kernels"));
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/kernels");
    out.push(fs::canonicalize(&shared).unwrap_or(shared));
    out
}

/// foliosim's cache directory.
pub fn cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("foliosim");
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/foliosim")
}

const IMAGE_NAMES: [&str; 3] = ["bzImage", "Image", "vmlinuz"];

/// Find kernel `spec`: a path to an image or to a kernel folder, or a
/// folder name in [`search_dirs`] (with `-<arch>` appended when `arch` is
/// given and the bare name is not there).
pub fn resolve(spec: &str, arch: Option<Arch>) -> Result<KernelImage, String> {
    let p = Path::new(spec);
    if p.is_file() {
        return open(p, p.parent().map(|d| d.join("config")));
    }
    if p.is_dir() {
        return open_dir(p)
            .ok_or_else(|| format!("{spec}: no kernel image (bzImage or Image) in this folder"))?;
    }
    let dirs = search_dirs();
    let mut names = vec![spec.to_string()];
    if let Some(a) = arch {
        names.push(format!("{spec}-{}", a.as_str()));
    }
    for d in &dirs {
        for n in &names {
            if n.contains('/') {
                continue;
            }
            if let Some(k) = open_dir(&d.join(n)) {
                return k;
            }
        }
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(format!(
        "no kernel named {spec} (looked in {}); `foliosim vm kernel list` shows the kernels \
         there, `foliosim vm kernel build --src LINUX_SOURCE --arch ARCH` builds one",
        looked.join(", ")
    ))
}

fn open_dir(d: &Path) -> Option<Result<KernelImage, String>> {
    let image = IMAGE_NAMES
        .iter()
        .map(|n| d.join(n))
        .find(|p| p.is_file())?;
    let mut k = open(&image, Some(d.join("config")));
    if let Ok(k) = &mut k {
        if let Some(n) = d.file_name() {
            k.name = n.to_string_lossy().into_owned();
        }
    }
    Some(k)
}

fn open(image: &Path, config: Option<PathBuf>) -> Result<KernelImage, String> {
    let bytes = fs::read(image).map_err(|e| format!("{}: {e}", image.display()))?;
    let arch = image_arch(&bytes).ok_or_else(|| {
        format!(
            "{}: not a kernel image foliosim can boot (an x86_64 bzImage or an arm64 Image)",
            image.display()
        )
    })?;
    let config = config.and_then(|c| fs::read_to_string(c).ok());
    let release = config
        .as_deref()
        .and_then(config_release)
        .or_else(|| image_release(&bytes))
        .unwrap_or_default();
    Ok(KernelImage {
        name: image
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        image: image.to_path_buf(),
        arch,
        release,
        config,
    })
}

/// The architecture of a kernel image: the x86 boot protocol's "HdrS"
/// (Documentation/arch/x86/boot.rst) or the arm64 Image header's magic
/// "ARM\x64" (Documentation/arch/arm64/booting.rst).
fn image_arch(b: &[u8]) -> Option<Arch> {
    if b.get(0x202..0x206) == Some(b"HdrS") {
        Some(Arch::X86_64)
    } else if b.get(0x38..0x3c) == Some(b"ARM\x64") {
        Some(Arch::Arm64)
    } else {
        None
    }
}

/// The release from a config's header ("# Linux/x86 6.18.35 Kernel
/// Configuration").
fn config_release(c: &str) -> Option<String> {
    c.lines().take(5).find_map(|l| {
        let rest = l.strip_prefix("# Linux/")?;
        let mut w = rest.split_whitespace();
        w.next()?;
        let v = w.next()?;
        (w.next() == Some("Kernel")).then(|| v.to_string())
    })
}

/// The release from the image: the bzImage's kernel_version string (its
/// offset at 0x20e, from 0x200), else a "Linux version " banner in an
/// uncompressed image.
fn image_release(b: &[u8]) -> Option<String> {
    let word = |at: usize| {
        let s = b.get(at..)?;
        let end = s.iter().position(|&c| c == b' ' || c == 0)?;
        std::str::from_utf8(&s[..end]).ok().map(str::to_string)
    };
    if image_arch(b) == Some(Arch::X86_64) {
        let off = u16::from_le_bytes([*b.get(0x20e)?, *b.get(0x20f)?]) as usize;
        return word(off + 0x200);
    }
    let banner = b"Linux version ";
    let at = b.windows(banner.len()).position(|w| w == banner)?;
    word(at + banner.len())
}

/// Every kernel in the search directories: (folder, kernel or error).
pub fn list() -> Vec<(PathBuf, Result<KernelImage, String>)> {
    let mut out = Vec::new();
    for d in search_dirs() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        let mut subs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        subs.sort();
        for s in subs {
            if let Some(k) = open_dir(&s) {
                out.push((s, k));
            }
        }
    }
    out
}

/// Build a kernel from the source tree `src` for `arch` with the
/// project's fragments and put it in the cache as `<release>-<arch>`.
/// `log` receives one line per stage. Returns the cached kernel.
pub fn build(
    src: &Path,
    arch: Arch,
    jobs: usize,
    log: &dyn Fn(&str),
) -> Result<KernelImage, String> {
    if !src.join("Makefile").is_file() || !src.join("mm").is_dir() {
        return Err(format!(
            "{}: not a Linux source tree (no Makefile and mm/)",
            src.display()
        ));
    }
    let tc = Toolchain::new(src, arch);
    tc.check()?;
    let tmp = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
    let version = tc.make(tmp.path(), &["kernelversion"])?;
    let name = format!("{version}-{}", arch.as_str());
    let out = cache_dir().join("build").join(&name);
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    log(&format!("configuring {name} in {}", out.display()));
    let base = tc.configure(&out, tmp.path(), log)?;
    log(&format!(
        "building {} with {jobs} jobs (about 5 minutes on 2 cores)",
        tc.image_name
    ));
    tc.make(&out, &[&format!("-j{jobs}"), tc.image_name])?;
    tc.install(&out, &name, base)
}

/// How this host builds a kernel of one architecture from one tree.
struct Toolchain<'a> {
    src: &'a Path,
    arch: Arch,
    /// The kernel's name of the architecture (`ARCH=`).
    karch: &'static str,
    /// The image, relative to the build folder.
    image_rel: &'static str,
    image_name: &'static str,
    /// `CROSS_COMPILE=` when the host is another architecture.
    cross: Option<&'static str>,
    /// The compiler that must be installed.
    tool: &'static str,
}

impl<'a> Toolchain<'a> {
    fn new(src: &'a Path, arch: Arch) -> Self {
        let host_arm64 = std::env::consts::ARCH == "aarch64";
        let (karch, image_rel, image_name, cross, tool) = match arch {
            Arch::X86_64 => ("x86", "arch/x86/boot/bzImage", "bzImage", None, "gcc"),
            Arch::Arm64 => (
                "arm64",
                "arch/arm64/boot/Image",
                "Image",
                (!host_arm64).then_some("aarch64-linux-gnu-"),
                "aarch64-linux-gnu-gcc",
            ),
        };
        Toolchain {
            src,
            arch,
            karch,
            image_rel,
            image_name,
            cross,
            tool,
        }
    }

    /// Whether the tools a build needs are installed (else how to get
    /// them).
    fn check(&self) -> Result<(), String> {
        let tool = self.tool;
        if self.cross.is_some() && Command::new(tool).arg("--version").output().is_err() {
            return Err(format!(
                "building an arm64 kernel here needs a cross compiler: apt-get install \
                 gcc-aarch64-linux-gnu ({tool} not found)"
            ));
        }
        for t in ["make", "flex", "bison", "bc"] {
            if Command::new("which")
                .arg(t)
                .output()
                .map_or(true, |o| !o.status.success())
            {
                return Err(format!(
                    "building a kernel needs {t}: apt-get install build-essential flex bison bc \
                     libelf-dev libssl-dev"
                ));
            }
        }
        Ok(())
    }

    /// `make -s ARGS` in the tree with the build folder `out`; its
    /// standard output, trimmed.
    fn make(&self, out: &Path, args: &[&str]) -> Result<String, String> {
        let mut c = Command::new("make");
        c.current_dir(self.src)
            .arg("-s")
            .arg(format!("ARCH={}", self.karch))
            .arg(format!("O={}", out.display()));
        if let Some(x) = self.cross {
            c.arg(format!("CROSS_COMPILE={x}"));
        }
        let o = c
            .args(args)
            .output()
            .map_err(|e| format!("running make: {e}"))?;
        if !o.status.success() {
            let err = String::from_utf8_lossy(&o.stderr);
            let tail: Vec<&str> = err.lines().rev().take(15).collect();
            return Err(format!(
                "make {} failed:\n{}",
                args.join(" "),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    }

    /// The architecture's fragment.
    fn fragment(&self) -> &'static str {
        match self.arch {
            Arch::X86_64 => FRAGMENT_X86_64,
            Arch::Arm64 => FRAGMENT_ARM64,
        }
    }

    /// Configure the build folder `out`: the base config, then the
    /// fragments merged in (written to `tmp`). Returns the base config's
    /// name; options the tree does not take go to `log`.
    fn configure(
        &self,
        out: &Path,
        tmp: &Path,
        log: &dyn Fn(&str),
    ) -> Result<&'static str, String> {
        let (src, arch) = (self.src, self.arch);
        let base = match arch {
            Arch::X86_64 => "tinyconfig",
            Arch::Arm64 => "defconfig",
        };
        self.make(out, &[base])?;
        if arch == Arch::Arm64 {
            let mut c = Command::new(src.join("scripts/config"));
            c.arg("--file").arg(out.join(".config"));
            for d in ARM64_DISABLE {
                c.args(["-d", d]);
            }
            let st = c.status().map_err(|e| format!("scripts/config: {e}"))?;
            if !st.success() {
                return Err("scripts/config failed".into());
            }
        }
        let arch_frag = self.fragment();
        let (mm, af) = (tmp.join("mm.config"), tmp.join("arch.config"));
        fs::write(&mm, FRAGMENT_MM).map_err(|e| e.to_string())?;
        fs::write(&af, arch_frag).map_err(|e| e.to_string())?;
        let st = Command::new(src.join("scripts/kconfig/merge_config.sh"))
            .current_dir(src)
            .env("ARCH", self.karch)
            .arg("-m")
            .arg("-O")
            .arg(out)
            .arg(out.join(".config"))
            .arg(&mm)
            .arg(&af)
            .output()
            .map_err(|e| format!("merge_config.sh: {e}"))?;
        if !st.status.success() {
            return Err(format!(
                "merge_config.sh failed: {}",
                String::from_utf8_lossy(&st.stderr)
            ));
        }
        self.make(out, &["olddefconfig"])?;
        let config = fs::read_to_string(out.join(".config")).map_err(|e| e.to_string())?;
        let unmet: Vec<&str> = FRAGMENT_MM
            .lines()
            .chain(arch_frag.lines())
            .filter(|l| l.ends_with("=y") && !config.lines().any(|c| c == *l))
            .collect();
        if !unmet.is_empty() {
            log(&format!(
                "note: options of the fragments this tree does not take: {}",
                unmet.join(" ")
            ));
        }
        Ok(base)
    }

    /// Copy the image built in `out` and its config to the cache as
    /// `name`, with a SOURCE note and the fragments; the cached kernel.
    fn install(&self, out: &Path, name: &str, base: &str) -> Result<KernelImage, String> {
        let dest = cache_dir().join("kernels").join(name);
        fs::create_dir_all(&dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        let copy = |from: &Path, to: &str| {
            fs::copy(from, dest.join(to))
                .map(|_| ())
                .map_err(|e| format!("copying {} to {}: {e}", from.display(), dest.display()))
        };
        copy(&out.join(self.image_rel), self.image_name)?;
        copy(&out.join(".config"), "config")?;
        let commit = Command::new("git")
            .current_dir(self.src)
            .args(["rev-parse", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let about = format!(
            "source: {}\ncommit: {}\nbase config: {base}\nfragments: mm.config {}.config\n",
            self.src.display(),
            commit.as_deref().unwrap_or("unknown (not a git checkout)"),
            self.arch.as_str()
        );
        fs::write(dest.join("SOURCE"), about).map_err(|e| e.to_string())?;
        fs::write(
            dest.join("fragment.config"),
            format!("{FRAGMENT_MM}{}", self.fragment()),
        )
        .map_err(|e| e.to_string())?;
        open_dir(&dest).expect("the image was just copied")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_from_a_config_header() {
        let c = "#\n# Automatically generated file; DO NOT EDIT.\n# Linux/x86 6.18.35 Kernel \
                 Configuration\n#\n";
        assert_eq!(config_release(c).as_deref(), Some("6.18.35"));
        let c = "#\n# Automatically generated file; DO NOT EDIT.\n# Linux/arm64 7.1.5 Kernel \
                 Configuration\n";
        assert_eq!(config_release(c).as_deref(), Some("7.1.5"));
        assert_eq!(config_release("CONFIG_MMU=y\n"), None);
    }

    #[test]
    fn arch_and_release_of_image_headers() {
        // A minimal bzImage: "HdrS" at 0x202, kernel_version at 0x20e
        // pointing 0x200 before the string.
        let mut b = vec![0u8; 0x400];
        b[0x202..0x206].copy_from_slice(b"HdrS");
        b[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        let v = b"6.18.35 (root@host) #1 SMP\0";
        b[0x300..0x300 + v.len()].copy_from_slice(v);
        assert_eq!(image_arch(&b), Some(Arch::X86_64));
        assert_eq!(image_release(&b).as_deref(), Some("6.18.35"));
        let mut a = vec![0u8; 0x200];
        a[0x38..0x3c].copy_from_slice(b"ARM\x64");
        a.extend_from_slice(b"xxLinux version 7.1.5-dirty (gcc) #2\0");
        assert_eq!(image_arch(&a), Some(Arch::Arm64));
        assert_eq!(image_release(&a).as_deref(), Some("7.1.5-dirty"));
        assert_eq!(image_arch(b"\x7fELF"), None);
    }
}
