// The Event Grid system topic of the storage account the documentation is published to, deployed into that account's
// resource group and region. Its system-assigned identity delivers the events (app/queue-sender.bicep gives it the
// right to), which is the only identity Event Grid may use for a storage queue behind a storage firewall.
param name string
param tags object = {}
@description('The existing storage account the documentation is published to (the events\' source), in this resource group.')
param storageAccountName string

resource docs 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

// A regional source's system topic lives in the source's region.
resource topic 'Microsoft.EventGrid/systemTopics@2025-02-15' = {
  name: name
  location: docs.location
  tags: tags
  identity: {
    type: 'SystemAssigned'
  }
  properties: {
    source: docs.id
    topicType: 'Microsoft.Storage.StorageAccounts'
  }
}

output name string = topic.name
output principalId string = topic.identity.principalId
