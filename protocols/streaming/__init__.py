"""The streaming machinery every protocol's parser shares: the tag loop, the commit policy,
the one search for literal markers, the dialects' open forms, and the scanners that read a
call's body as it arrives."""
