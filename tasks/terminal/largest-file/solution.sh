cd tree && find . -type f -printf '%s %P\n' | sort -n | tail -1 | cut -d' ' -f2 > ../largest.txt
