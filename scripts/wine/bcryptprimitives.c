/*
 * bcryptprimitives.c -- TEST-ONLY shim DLL for running x86_64-pc-windows-gnu
 * Rust binaries under wine 8 (Debian bookworm's wine 8.0).
 *
 * Why: Rust std (>= 1.78, here 1.95) imports ProcessPrng from
 * bcryptprimitives.dll (used e.g. to seed HashMap's RandomState). Wine 8 has
 * no bcryptprimitives.dll at all (added in wine 9), so every Rust exe fails
 * at start-up with an unresolved import. This DLL exports ProcessPrng and
 * fills the buffer with RtlGenRandom (advapi32!SystemFunction036), which
 * wine implements.
 *
 * This is for tests under wine ONLY. It is built by scripts/wine/build-shim
 * into target/wine-shim/ and copied into the test wine prefix's system32 by
 * scripts/wine/run. It must NEVER be shipped in a release: real Windows
 * (10+) provides bcryptprimitives.dll itself.
 *
 * DLL override: wine 8 has no builtin bcryptprimitives, so the native DLL in
 * system32 is loaded without any override. scripts/wine/run still
 * sets WINEDLLOVERRIDES=bcryptprimitives=n,b so that this shim is used
 * deterministically even on wines that ship a builtin (wine >= 9).
 *
 * Exports: ProcessPrng only (undecorated, via __declspec(dllexport); x64
 * has no stdcall @N suffix) -- it is the only
 * bcryptprimitives import of Rust std (check with
 * `x86_64-w64-mingw32-objdump -p foo.exe | grep -A4 'DLL Name: bcryptprimitives'`).
 */
#include <windows.h>

/* RtlGenRandom; declared here to avoid ntsecapi.h's macro dance. */
BOOLEAN WINAPI SystemFunction036(PVOID RandomBuffer, ULONG RandomBufferLength);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE pbData, SIZE_T cbData)
{
    /* SystemFunction036 takes a ULONG length; SIZE_T is 64-bit on x64. */
    while (cbData > 0) {
        ULONG chunk = cbData > 0x40000000 ? 0x40000000 : (ULONG)cbData;
        if (!SystemFunction036(pbData, chunk)) {
            /* Real ProcessPrng never fails; a missing RNG is fatal. */
            RaiseFailFastException(NULL, NULL, 0);
        }
        pbData += chunk;
        cbData -= chunk;
    }
    return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE hinst, DWORD reason, LPVOID reserved)
{
    (void)hinst; (void)reason; (void)reserved;
    return TRUE;
}
