mkdir -p tree/a/b tree/c
head -c 1000 /dev/zero > tree/top.bin
head -c 5000 /dev/zero > tree/a/b/deep.bin
head -c 3000 /dev/zero > tree/c/mid.bin
head -c 4000 /dev/zero > tree/a/near.bin
