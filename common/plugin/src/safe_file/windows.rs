//! [`super`]'s file operations on Windows. What Unix gets from modes, `O_NOFOLLOW` and
//! `fstat`, Windows gets from access lists and reparse points:
//!
//! - the directory is created with a protected access list that grants access only to SYSTEM,
//!   Administrators and the running account (the kubelet's, usually SYSTEM); an existing one
//!   must be owned by one of them and is closed to everyone else when it is more open;
//! - every file the cache creates is created with that same protected list (inheritance is not
//!   relied on), so no other process can open it under a looser one, even for an instant;
//! - every file is opened with `FILE_FLAG_OPEN_REPARSE_POINT`, so a symlink or junction is
//!   opened as itself and refused, never followed; and it is trusted only when the open handle
//!   shows a regular file owned by one of those accounts whose access list lets nobody else in.
//!
//! Windows has no FIFOs in a directory (named pipes live under `\\.\pipe\`), so opening a file
//! here cannot block.

use std::ffi::c_void;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
use std::os::windows::io::{AsRawHandle, FromRawHandle, RawHandle};
use std::path::Path;
use std::time::SystemTime;

use windows_sys::Win32::Foundation::{
    GENERIC_READ, GENERIC_WRITE, HANDLE, HLOCAL, INVALID_HANDLE_VALUE, LocalFree, WIN32_ERROR,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, GetSecurityInfo,
    SE_FILE_OBJECT, SetSecurityInfo,
};
use windows_sys::Win32::Security::{
    ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, DACL_SECURITY_INFORMATION, GetAce,
    GetSecurityDescriptorControl, GetSecurityDescriptorDacl, GetTokenInformation,
    OWNER_SECURITY_INFORMATION, PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID,
    SE_DACL_PROTECTED, SECURITY_ATTRIBUTES, SECURITY_DESCRIPTOR_CONTROL, TOKEN_OWNER, TOKEN_QUERY,
    TOKEN_USER, TokenOwner, TokenUser,
};
use windows_sys::Win32::Storage::FileSystem::{
    CREATE_NEW, CreateDirectoryW, CreateFileW, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_NORMAL,
    FILE_ATTRIBUTE_REPARSE_POINT, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
    FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, READ_CONTROL, WRITE_DAC,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// `ACCESS_ALLOWED_ACE_TYPE` and `ACCESS_DENIED_ACE_TYPE`.
const ACCESS_ALLOWED: u8 = 0;
const ACCESS_DENIED: u8 = 1;
/// `ERROR_ALREADY_EXISTS`.
const ALREADY_EXISTS: WIN32_ERROR = 183;

/// The accounts the cache's files may belong to and be open to, as SID strings: the running
/// account, the owner its token gives new objects, SYSTEM and Administrators.
#[derive(Debug, Clone)]
pub struct Owner {
    user: Option<String>,
    trusted: Vec<String>,
}

impl Owner {
    /// The protected access list for the directory (inherited) or a file (not).
    fn sddl(&self, inherit: bool) -> String {
        let flags = if inherit { "OICI" } else { "" };
        let mut text = format!("D:P(A;{flags};FA;;;SY)(A;{flags};FA;;;BA)");
        if let Some(user) = &self.user {
            text.push_str(&format!("(A;{flags};FA;;;{user})"));
        }
        text
    }

    fn trusts(&self, sid: &str) -> bool {
        self.trusted.iter().any(|t| t == sid)
    }
}

/// The running process's account and its token's default owner.
pub fn current_owner() -> Owner {
    let mut trusted = vec!["S-1-5-18".to_owned(), "S-1-5-32-544".to_owned()];
    let mut user = None;
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: the pseudo handle of GetCurrentProcess needs no closing; `token` is a valid out
    // pointer, written only on success.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } != 0
        && !token.is_null()
    {
        user = token_sid::<TOKEN_USER>(token, TokenUser, |info| info.User.Sid);
        trusted.extend(token_sid::<TOKEN_OWNER>(token, TokenOwner, |info| {
            info.Owner
        }));
        // SAFETY: `token` was opened above, is not used after this, and is closed once.
        unsafe { windows_sys::Win32::Foundation::CloseHandle(token) };
    }
    trusted.extend(user.clone());
    Owner { user, trusted }
}

/// A buffer for `GetTokenInformation`, aligned for the structures it returns (they hold
/// pointers) and large enough for a `TOKEN_USER` or `TOKEN_OWNER` with any SID (a SID is at most
/// 68 bytes, stored after the structure).
#[repr(C, align(8))]
struct TokenInfo([u8; 512]);

/// The SID `sid_of` reads from the `class` information of `token` (a `T`: `TOKEN_USER` for
/// `TokenUser`, `TOKEN_OWNER` for `TokenOwner`), as text.
fn token_sid<T>(
    token: HANDLE,
    class: windows_sys::Win32::Security::TOKEN_INFORMATION_CLASS,
    sid_of: impl FnOnce(&T) -> PSID,
) -> Option<String> {
    // The buffer holds a `T` at its start, aligned, with room for the SID after it.
    const {
        assert!(align_of::<TokenInfo>() >= align_of::<T>());
        assert!(size_of::<TokenInfo>() >= size_of::<T>() + 68);
    }
    let mut buf = TokenInfo([0; 512]);
    let mut len = 0u32;
    // SAFETY: `token` is open for TOKEN_QUERY; the buffer's size is passed, so the call writes
    // within it, and `len` is a valid out pointer.
    let ok = unsafe {
        GetTokenInformation(
            token,
            class,
            buf.0.as_mut_ptr().cast(),
            size_of::<TokenInfo>() as u32,
            &mut len,
        )
    };
    // Only a successful call that filled at least a whole `T` is read.
    if ok == 0 || (len as usize) < size_of::<T>() || len as usize > size_of::<TokenInfo>() {
        return None;
    }
    // SAFETY: the call wrote a `T` of the class asked for at the buffer's start (the caller pairs
    // `T` with `class`), which is aligned for it (asserted above); it lives as long as `buf`.
    let info = unsafe { &*buf.0.as_ptr().cast::<T>() };
    let sid = sid_of(info);
    // SAFETY: `sid` is null or points into `buf` (still alive), at the SID the call wrote.
    unsafe { sid_string(sid) }
}

/// Creates `dir` with the cache's access list, or checks an existing one: a real directory (not
/// a link or junction) owned by a trusted account, closed to others (closed here when it is not).
pub fn prepare_dir(dir: &Path, owner: &Owner) -> Result<(), String> {
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("creating it failed: {e}"))?;
    }
    let created = with_descriptor(&owner.sddl(true), |sd| {
        let sa = SECURITY_ATTRIBUTES {
            nLength: size_of::<SECURITY_ATTRIBUTES>() as u32,
            lpSecurityDescriptor: sd,
            bInheritHandle: 0,
        };
        let path = wide(dir);
        // SAFETY: `path` is NUL-terminated and `sa` points at a valid descriptor for the call.
        if unsafe { CreateDirectoryW(path.as_ptr(), &sa) } != 0 {
            Ok(true)
        } else {
            match std::io::Error::last_os_error() {
                e if e.raw_os_error() == Some(ALREADY_EXISTS as i32) => Ok(false),
                e => Err(format!("creating it failed: {e}")),
            }
        }
    })?;
    let handle = OpenOptions::new()
        .read(true)
        .access_mode(READ_CONTROL | WRITE_DAC)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
        .open(dir)
        .map_err(|e| format!("opening it failed: {e}"))?;
    let attributes = handle
        .metadata()
        .map_err(|e| e.to_string())?
        .file_attributes();
    if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 || attributes & FILE_ATTRIBUTE_DIRECTORY == 0
    {
        return Err("it is not a directory (a link or junction is not followed)".into());
    }
    match access(&handle, owner)? {
        Access::Private => Ok(()),
        Access::Open(who) => {
            if !created {
                tracing::warn!(dir = %dir.display(), "token cache directory is open to {who}; closing it to everyone but SYSTEM, Administrators and this account");
            }
            protect(&handle, &owner.sddl(true))
        }
    }
}

/// Opens (or with `create`, makes) a lock file, and checks the open handle: a regular file of a
/// trusted account, closed to others. A missing lock without `create` is `Ok(None)`.
pub fn open_lock(path: &Path, owner: &Owner, create: bool) -> Result<Option<File>, String> {
    let existing = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .access_mode(GENERIC_READ | GENERIC_WRITE | READ_CONTROL)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)
    };
    let file = if create {
        match create_private(path, owner) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                existing().map_err(|e| format!("opening it failed: {e}"))?
            }
            Err(e) => return Err(format!("creating it failed: {e}")),
        }
    } else {
        match existing() {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("opening it failed: {e}")),
        }
    };
    check_owned(&file, owner)?;
    Ok(Some(file))
}

/// Reads a cache file of at most `max_bytes` only if it is a regular file of a trusted account,
/// closed to others. `Ok(None)`: no such file.
pub fn read_owned_file(
    path: &Path,
    owner: &Owner,
    max_bytes: u64,
) -> Result<Option<Vec<u8>>, String> {
    let file = match OpenOptions::new()
        .read(true)
        .access_mode(GENERIC_READ | READ_CONTROL)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // ERROR_PATH_NOT_FOUND: the directory is missing; reported when it is created.
        Err(e) if e.raw_os_error() == Some(3) => return Ok(None),
        Err(e) => return Err(format!("opening it failed: {e}")),
    };
    check_owned(&file, owner)?;
    super::read_capped(file, max_bytes).map(Some)
}

/// The metrics file: on Windows it is kept private like the cache's files (the exporter runs as
/// a trusted account, LocalSystem or an administrator).
pub fn read_shared_file(
    path: &Path,
    owner: &Owner,
    max_bytes: u64,
) -> Result<Option<Vec<u8>>, String> {
    read_owned_file(path, owner, max_bytes)
}

/// [`write_atomic`] for the metrics file (private, as [`read_shared_file`] says).
pub fn write_atomic_shared(path: &Path, bytes: &[u8], owner: &Owner) -> std::io::Result<()> {
    write_atomic(path, bytes, owner)
}

/// When `path` was last written, if it is a regular file of a trusted account (not followed if
/// a link).
pub fn own_file_modified(path: &Path, owner: &Owner) -> Option<SystemTime> {
    let file = OpenOptions::new()
        .access_mode(READ_CONTROL)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
        .ok()?;
    check_owned(&file, owner).ok()?;
    file.metadata().ok()?.modified().ok()
}

/// Writes `bytes` to a new private file next to `path` and renames it over `path`, so a reader
/// sees the old entry or the new one, never half of one.
pub fn write_atomic(path: &Path, bytes: &[u8], owner: &Owner) -> std::io::Result<()> {
    write_private(path, bytes, owner, false)
}

/// [`write_atomic`], flushed to disk before the rename: a crash leaves the old file or the whole
/// new one.
pub fn write_atomic_durable(path: &Path, bytes: &[u8], owner: &Owner) -> std::io::Result<()> {
    write_private(path, bytes, owner, true)
}

fn write_private(path: &Path, bytes: &[u8], owner: &Owner, sync: bool) -> std::io::Result<()> {
    let tmp = super::temporary_name(path);
    let result = (|| {
        let mut file = create_private(&tmp, owner)?;
        file.write_all(bytes)?;
        file.flush()?;
        if sync {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Creates a new file (never opens an existing one) with the cache's access list given at
/// creation: no other exec can ever open it under a looser list (an inherited one, or whatever a
/// later `SetSecurityInfo` would replace), not even for an instant.
fn create_private(path: &Path, owner: &Owner) -> std::io::Result<File> {
    let path = wide(path);
    with_descriptor(&owner.sddl(false), |sd| {
        let sa = SECURITY_ATTRIBUTES {
            nLength: size_of::<SECURITY_ATTRIBUTES>() as u32,
            lpSecurityDescriptor: sd,
            bInheritHandle: 0,
        };
        // SAFETY: `path` is NUL-terminated and `sa` points at a valid descriptor, both alive
        // for the call; no template handle.
        let handle = unsafe {
            CreateFileW(
                path.as_ptr(),
                GENERIC_READ | GENERIC_WRITE | READ_CONTROL | WRITE_DAC,
                FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                &sa,
                CREATE_NEW,
                FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT,
                std::ptr::null_mut(),
            )
        };
        if handle == INVALID_HANDLE_VALUE || handle.is_null() {
            return Ok(Err(std::io::Error::last_os_error()));
        }
        // SAFETY: a valid handle CreateFileW just returned, owned by nothing else: the `File`
        // takes it over and closes it once.
        Ok(Ok(unsafe { File::from_raw_handle(handle as RawHandle) }))
    })
    .map_err(std::io::Error::other)?
}

/// A file we may trust: regular (not a directory, link or junction), owned by a trusted
/// account, and its access list lets nobody else in.
fn check_owned(file: &File, owner: &Owner) -> Result<(), String> {
    let attributes = file
        .metadata()
        .map_err(|e| e.to_string())?
        .file_attributes();
    if attributes & (FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DIRECTORY) != 0 {
        return Err("it is not a regular file (a link or junction is not followed)".into());
    }
    match access(file, owner)? {
        Access::Private => Ok(()),
        Access::Open(who) => Err(format!("its access list lets {who} in")),
    }
}

/// Whether an open object is closed to everyone but the trusted accounts.
enum Access {
    Private,
    /// Open to the account named (a SID), or to everyone.
    Open(String),
}

/// Reads the owner and access list of an open file or directory. An untrusted owner is an
/// error; an access list that grants anything to another account is [`Access::Open`].
fn access(file: &File, owner: &Owner) -> Result<Access, String> {
    let mut owner_sid: PSID = std::ptr::null_mut();
    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: the handle is open for READ_CONTROL; the out pointers point into `sd`, which is
    // freed with LocalFree once they are no longer read.
    let rc = unsafe {
        GetSecurityInfo(
            file.as_raw_handle() as HANDLE,
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
            &mut owner_sid,
            std::ptr::null_mut(),
            &mut dacl,
            std::ptr::null_mut(),
            &mut sd,
        )
    };
    if rc != 0 {
        return Err(format!(
            "reading its access list failed: {}",
            std::io::Error::from_raw_os_error(rc as i32)
        ));
    }
    let result = (|| {
        // SAFETY: `owner_sid` is null (no owner: refused below) or points into `sd`, which is
        // still allocated.
        let who = unsafe { sid_string(owner_sid) }.unwrap_or_else(|| "an unknown account".into());
        if !owner.trusts(&who) {
            return Err(format!(
                "it is owned by {who}, not by this account, SYSTEM or Administrators"
            ));
        }
        if dacl.is_null() {
            return Ok(Access::Open("everyone (no access list)".into()));
        }
        // SAFETY: `dacl` is not null and points at the ACL inside `sd`, still allocated.
        let count = unsafe { (*dacl).AceCount };
        for index in 0..u32::from(count) {
            let mut ace: *mut c_void = std::ptr::null_mut();
            // SAFETY: `dacl` is a valid ACL and `index` is below its AceCount; `ace` is a valid
            // out pointer.
            if unsafe { GetAce(dacl, index, &mut ace) } == 0 || ace.is_null() {
                return Ok(Access::Open("an unreadable entry".into()));
            }
            // SAFETY: GetAce succeeded: `ace` points at an entry inside the ACL, which starts
            // with its header (ACEs are DWORD-aligned within the list).
            let kind = unsafe { (*ace.cast::<ACE_HEADER>()).AceType };
            match kind {
                ACCESS_DENIED => {}
                ACCESS_ALLOWED => {
                    // SAFETY: an ACCESS_ALLOWED entry is an ACCESS_ALLOWED_ACE whose SID starts
                    // at SidStart; only its address is taken.
                    let sid =
                        unsafe { std::ptr::addr_of!((*ace.cast::<ACCESS_ALLOWED_ACE>()).SidStart) }
                            as PSID;
                    // SAFETY: `sid` points at the entry's SID, inside the ACL.
                    let grantee = unsafe { sid_string(sid) }.unwrap_or_default();
                    if !owner.trusts(&grantee) {
                        return Ok(Access::Open(grantee));
                    }
                }
                other => return Ok(Access::Open(format!("an entry of type {other}"))),
            }
        }
        Ok(Access::Private)
    })();
    // SAFETY: `sd` was allocated by GetSecurityInfo and is not used after this.
    unsafe { LocalFree(sd as HLOCAL) };
    result
}

/// Replaces the access list of an open object (opened with `WRITE_DAC`) by `sddl`'s, protected
/// from inheritance. A descriptor without an access list, or with an unprotected one, is an
/// error: a NULL access list handed to `SetSecurityInfo` would grant everyone full control.
fn protect(file: &File, sddl: &str) -> Result<(), String> {
    with_descriptor(sddl, |sd| {
        let mut present = 0;
        let mut defaulted = 0;
        let mut dacl: *mut ACL = std::ptr::null_mut();
        // SAFETY: `sd` is a valid descriptor for the duration of the closure; the out pointers
        // are valid; `dacl` then points into `sd`.
        if unsafe { GetSecurityDescriptorDacl(sd, &mut present, &mut dacl, &mut defaulted) } == 0 {
            return Err(format!(
                "building its access list failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        let mut control: SECURITY_DESCRIPTOR_CONTROL = 0;
        let mut revision = 0u32;
        // SAFETY: as above; `control` and `revision` are valid out pointers.
        if unsafe { GetSecurityDescriptorControl(sd, &mut control, &mut revision) } == 0 {
            return Err(format!(
                "reading its access list's flags failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        dacl_to_set(present != 0, dacl.is_null(), control)?;
        // SAFETY: the handle is open for WRITE_DAC; `dacl` is a present, non-null, protected
        // access list inside `sd` (checked just above), alive for the call; the other pointers
        // are null because their parts are not set.
        let rc = unsafe {
            SetSecurityInfo(
                file.as_raw_handle() as HANDLE,
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                dacl,
                std::ptr::null_mut(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!(
                "setting its access list failed: {}",
                std::io::Error::from_raw_os_error(rc as i32)
            ))
        }
    })
}

/// Whether a descriptor's access list may be handed to `SetSecurityInfo`: present, not null (a
/// NULL access list grants everyone full control) and protected from inheritance.
fn dacl_to_set(
    present: bool,
    null: bool,
    control: SECURITY_DESCRIPTOR_CONTROL,
) -> Result<(), String> {
    if !present || null {
        return Err("building its access list failed: the descriptor has no access list".into());
    }
    if control & SE_DACL_PROTECTED == 0 {
        return Err(
            "building its access list failed: the access list is not protected from inheritance"
                .into(),
        );
    }
    Ok(())
}

/// Runs `f` with a security descriptor built from `sddl`, freed afterwards.
fn with_descriptor<T>(
    sddl: &str,
    f: impl FnOnce(PSECURITY_DESCRIPTOR) -> Result<T, String>,
) -> Result<T, String> {
    let text: Vec<u16> = sddl.encode_utf16().chain(Some(0)).collect();
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `text` is NUL-terminated; revision 1 is SDDL_REVISION_1.
    let ok = unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            text.as_ptr(),
            1,
            &mut sd,
            std::ptr::null_mut(),
        )
    };
    if ok == 0 {
        return Err(format!(
            "building an access list failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    let result = f(sd);
    // SAFETY: allocated by the conversion above and not used after this.
    unsafe { LocalFree(sd as HLOCAL) };
    result
}

/// A SID as text (`S-1-5-18`); `None` for a null pointer or a SID Windows cannot convert.
///
/// # Safety
/// `sid` must be null or point at a SID that stays allocated during the call.
unsafe fn sid_string(sid: PSID) -> Option<String> {
    if sid.is_null() {
        return None;
    }
    let mut text: windows_sys::core::PWSTR = std::ptr::null_mut();
    // SAFETY: `sid` is not null and, by the caller's contract, a valid SID; `text` is a valid
    // out pointer.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 || text.is_null() {
        return None;
    }
    let mut len = 0;
    // SAFETY: on success `text` is a NUL-terminated UTF-16 string: reading up to its NUL stays
    // inside it.
    while unsafe { *text.add(len) } != 0 {
        len += 1;
    }
    // SAFETY: `len` code units before the NUL were just read.
    let out = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, len) });
    // SAFETY: `text` was allocated by ConvertSidToStringSidW and is not used after this.
    unsafe { LocalFree(text as HLOCAL) };
    Some(out)
}

fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str().encode_wide().chain(Some(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_null_sid_is_no_sid() {
        // SAFETY: null is allowed.
        assert_eq!(unsafe { sid_string(std::ptr::null_mut()) }, None);
    }

    #[test]
    fn only_a_present_protected_access_list_is_set() {
        let absent = "building its access list failed: the descriptor has no access list";
        assert_eq!(
            dacl_to_set(false, true, SE_DACL_PROTECTED),
            Err(absent.into())
        );
        assert_eq!(
            dacl_to_set(false, false, SE_DACL_PROTECTED),
            Err(absent.into())
        );
        assert_eq!(
            dacl_to_set(true, true, SE_DACL_PROTECTED),
            Err(absent.into())
        );
        assert_eq!(
            dacl_to_set(true, false, 0),
            Err("building its access list failed: the access list is not protected from inheritance".into())
        );
        assert_eq!(dacl_to_set(true, false, SE_DACL_PROTECTED), Ok(()));
    }

    /// The real calls: a descriptor without an access list, with a NULL one (`D:NO_ACCESS_CONTROL`)
    /// or with an unprotected one is refused before `SetSecurityInfo`; a new file is created
    /// private, and the cache's own list is accepted. Run under wine by `scripts/cross-test`.
    #[test]
    fn protect_sets_only_the_caches_protected_list() {
        let owner = current_owner();
        assert!(owner.trusts("S-1-5-18") && owner.trusts("S-1-5-32-544"));
        let path = std::env::temp_dir().join(format!("kcp-protect-{}", std::process::id()));
        let _ = fs::remove_file(&path);
        let file = create_private(&path, &owner).unwrap();
        if let Access::Open(who) = access(&file, &owner).unwrap() {
            panic!("a new file is open to {who}");
        }
        for (sddl, error) in [
            ("O:SY", "has no access list"),
            ("D:(A;;FA;;;WD)", "not protected from inheritance"),
        ] {
            let got = protect(&file, sddl).unwrap_err();
            assert!(got.contains(error), "{sddl}: {got}");
        }
        // A NULL list: Windows reads it as present and null, wine as not protected; refused
        // either way.
        let got = protect(&file, "D:NO_ACCESS_CONTROL").unwrap_err();
        assert!(
            got.starts_with("building its access list failed: "),
            "{got}"
        );
        protect(&file, &owner.sddl(false)).unwrap();
        // (Read back, wine shows Everyone after any SetSecurityInfo on a file: it keeps the list
        // as Unix mode bits. Windows is not at hand here, so the readback is not asserted.)
        drop(file);
        fs::remove_file(&path).unwrap();
    }
}
