printf 'pear\napple\npear\nfig\napple\nkiwi\nfig\n' > list.txt
