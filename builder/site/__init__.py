"""What writes the site's files: content-hashed storage, the data files, the manifest, the browser runtime."""
