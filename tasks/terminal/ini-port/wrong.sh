sed -i 's/^port = .*/port = 8080/' config.ini
