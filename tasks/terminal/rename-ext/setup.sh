mkdir -p docs/keep
printf 'alpha\n' > docs/a.txt
printf 'beta\n' > docs/b.txt
printf 'gamma notes\n' > docs/c.notes.txt
printf 'nested\n' > docs/keep/inner.txt
