cd tree && ls -S | head -1 > ../largest.txt
