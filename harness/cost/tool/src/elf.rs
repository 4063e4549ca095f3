//! Symbol addresses from an ELF32 little-endian file (the probe images): just the section headers
//! and `.symtab`.

use std::path::Path;

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}

/// The values of `names` (in that order) in the ELF's symbol table.
pub fn symbols(path: &Path, names: &[&str]) -> Result<Vec<u32>, String> {
    let b = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let bad = || {
        format!(
            "{}: not a little-endian ELF32 file with a symbol table",
            path.display()
        )
    };
    if b.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 1, 1][..]) {
        return Err(bad());
    }
    let shoff = u32_at(&b, 0x20).ok_or_else(bad)? as usize;
    let shentsize = u16_at(&b, 0x2e).ok_or_else(bad)? as usize;
    let shnum = u16_at(&b, 0x30).ok_or_else(bad)? as usize;
    let section = |i: usize| -> Option<(u32, usize, usize, usize)> {
        let h = shoff + i * shentsize;
        // (sh_type, sh_offset, sh_size, sh_link)
        Some((
            u32_at(&b, h + 4)?,
            u32_at(&b, h + 16)? as usize,
            u32_at(&b, h + 20)? as usize,
            u32_at(&b, h + 24)? as usize,
        ))
    };
    const SHT_SYMTAB: u32 = 2;
    let (_, off, size, link) = (0..shnum)
        .filter_map(section)
        .find(|s| s.0 == SHT_SYMTAB)
        .ok_or_else(bad)?;
    let (_, stroff, strsize, _) = section(link).ok_or_else(bad)?;
    let strtab = b.get(stroff..stroff + strsize).ok_or_else(bad)?;
    let mut out = vec![None; names.len()];
    for e in (off..off + size).step_by(16) {
        let name = u32_at(&b, e).ok_or_else(bad)? as usize;
        let value = u32_at(&b, e + 4).ok_or_else(bad)?;
        let Some(rest) = strtab.get(name..) else {
            continue;
        };
        let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        if let Some(i) = names.iter().position(|n| n.as_bytes() == &rest[..end]) {
            out[i] = Some(value);
        }
    }
    out.into_iter()
        .zip(names)
        .map(|(v, n)| v.ok_or_else(|| format!("{}: no symbol {n}", path.display())))
        .collect()
}
