mkdir -p bin secrets
printf '#!/bin/sh\necho a\n' > bin/a.sh
printf '#!/bin/sh\necho b\n' > bin/b.sh
printf 'not a script\n' > bin/notes.txt
printf 'k3y\n' > secrets/key.txt
chmod 644 bin/* secrets/key.txt
