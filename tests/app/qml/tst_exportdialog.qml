import QtQuick
import QtQuick.Dialogs
import QtTest
import Ember

// The export dialog is a Save dialog that opens in the suggested file's folder.
Item {
    id: root
    width: 800
    height: 600

    QtObject {
        id: mockChat
        property var exported: []
        function suggestedExportFile(format) {
            return "file:///home/someone/Documents/My chat." + (format === "json" ? "json" : "md")
        }
        function exportConversation(file, format) { exported = exported.concat([[String(file), format]]) }
    }

    ExportDialog {
        id: dialog
        chat: mockChat
    }

    TestCase {
        name: "ExportDialog"
        when: windowShown

        function test_saveDialogInTheSuggestedFolder() {
            dialog.ask("markdown")
            compare(dialog.fileMode, FileDialog.SaveFile)
            compare(dialog.acceptLabel, "Save")
            compare(String(dialog.currentFolder), "file:///home/someone/Documents")
            compare(String(dialog.selectedFile), "file:///home/someone/Documents/My chat.md")
            compare(dialog.nameFilters[0], "Markdown (*.md)")
            dialog.close()
            dialog.ask("json")
            compare(dialog.defaultSuffix, "json")
            compare(String(dialog.selectedFile), "file:///home/someone/Documents/My chat.json")
            dialog.close()
        }
    }
}
